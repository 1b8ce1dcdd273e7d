//! Temporal External Storage references and stored objects: whatever arrives in a payload's
//! metadata and data, or in the object a claim names, is resolved, refused with a typed error, or
//! passed through; never a panic.
//!
//! `cargo fuzz run --fuzz-dir tests/fuzz --sanitizer none external_storage -- -max_total_time=60`
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStoreExt as _, PutPayload};
use overspill::external_storage::{
    Driver, ExternalStorage, ExternalStorageError, ExternalStorageSettings, KeyScope, Reference,
    resolve,
};
use overspill::store::{Bucket, StoreOptions};
use prost::Message as _;
use temporalio_common::protos::temporal::api::common::v1::Payload;

/// The metadata a reference may come with: each of the forms the SDKs write, and anything else.
#[derive(Debug, Arbitrary)]
enum Form<'a> {
    ProtoJson,
    Legacy,
    Marker(&'a str),
    Other(&'a str, &'a [u8]),
}

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    form: Form<'a>,
    data: &'a [u8],
    /// Bytes planted as the object a well-formed claim names, hashed correctly.
    stored: &'a [u8],
    gcs: bool,
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
});

fn payload(form: &Form<'_>, data: &[u8]) -> Payload {
    let pair = |k: &str, v: &[u8]| (k.to_owned(), v.to_vec());
    let metadata = match form {
        Form::ProtoJson => HashMap::from([
            pair("encoding", b"json/protobuf"),
            pair(
                "messageType",
                b"temporal.api.sdk.v1.ExternalStorageReference",
            ),
        ]),
        Form::Legacy => HashMap::from([pair("encoding", b"json/external-storage-reference")]),
        Form::Marker(encoding) => HashMap::from([
            pair("encoding", encoding.as_bytes()),
            pair("__temporal_external_storage_reference", b"true"),
        ]),
        Form::Other(key, value) => HashMap::from([pair(key, value)]),
    };
    Payload {
        metadata,
        data: data.to_vec(),
        ..Payload::default()
    }
}

fuzz_target!(|input: Input<'_>| {
    let driver = if input.gcs { Driver::Gcs } else { Driver::S3 };
    let memory = Arc::new(InMemory::new());
    let bucket = Bucket::new(memory.clone(), "payloads", "", StoreOptions::default());
    let settings = ExternalStorageSettings {
        max_payload_bytes: 1 << 16,
        ..ExternalStorageSettings::default()
    };
    let storage = ExternalStorage::new(driver, bucket, settings);
    RUNTIME.block_on(async {
        // Any payload: an ordinary one passes through unchanged; a reference round-trips.
        let arrived = payload(&input.form, input.data);
        if let Ok(Some(reference)) = Reference::from_payload(&arrived) {
            let written = reference.to_payload();
            assert_eq!(
                Reference::from_payload(&written).ok().flatten(),
                Some(reference.clone())
            );
            let _ = driver.locate(&reference);
        }
        match resolve(Some(&storage), arrived.clone()).await {
            Ok(resolved) if !Reference::is_reference(&arrived) => assert_eq!(resolved, arrived),
            _ => {}
        }
        // Any object behind a claim whose hash matches: decoded or refused as undecodable.
        let sha256: String = ring::digest::digest(&ring::digest::SHA256, input.stored)
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let key = driver.object_key("", &KeyScope::Namespace("default"), &sha256);
        memory
            .put(
                &Path::from(key.as_str()),
                PutPayload::from(input.stored.to_vec()),
            )
            .await
            .expect("an in-memory put");
        let reference = Reference {
            driver_name: driver.name().to_owned(),
            claim: driver.claim("payloads", &key, &sha256),
            size_bytes: Some(input.stored.len() as u64),
        };
        match storage.retrieve(&reference).await {
            Ok(decoded) => assert_eq!(Some(decoded), Payload::decode(input.stored).ok()),
            Err(e) => assert!(
                matches!(
                    e,
                    ExternalStorageError::Undecodable { .. }
                        | ExternalStorageError::TooLarge { .. }
                ),
                "a stored object with a matching hash: {e}"
            ),
        }
    });
});
