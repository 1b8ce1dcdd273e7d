//! Link the addon as napi-rs does: Node symbols are resolved when Node loads it.

fn main() {
    napi_build::setup();
}
