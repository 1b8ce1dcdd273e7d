//! Generates the `proto/overspill/v1` messages (prost) and their proto3 JSON mapping (pbjson).
//! Pure Rust (protox): no `protoc` needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let files = [
        "proto/overspill/v1/limits.proto",
        "proto/overspill/v1/activities.proto",
    ];
    let descriptors = protox::compile(files, ["proto"])?;
    let bytes = prost::Message::encode_to_vec(&descriptors);
    let descriptor_path = out.join("overspill_descriptor.bin");
    std::fs::write(&descriptor_path, &bytes)?;
    prost_build::Config::new()
        .btree_map(["."])
        .compile_fds(descriptors)?;
    pbjson_build::Builder::new()
        .register_descriptors(&bytes)?
        .btree_map(["."])
        .build(&[".overspill.v1"])?;
    Ok(())
}
