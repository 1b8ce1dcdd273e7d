//! Compiles the `proto/overspill/v1` descriptors (read at run time to convert the protobuf forms)
//! and generates their prost messages. Pure Rust (protox): no `protoc` needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let files = [
        "proto/overspill/v1/limits.proto",
        "proto/overspill/v1/activities.proto",
    ];
    let descriptors = protox::compile(files, ["proto"])?;
    let bytes = prost::Message::encode_to_vec(&descriptors);
    std::fs::write(out.join("overspill_descriptor.bin"), &bytes)?;
    prost_build::Config::new()
        .btree_map(["."])
        .compile_fds(descriptors)?;
    Ok(())
}
