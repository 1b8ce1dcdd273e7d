//! The payload a stored payload leaves in history: a driver name and the driver's claim.
//!
//! Three forms are read, as temporalio 1.35's Python SDK reads them:
//! - `encoding: json/protobuf`, `messageType: temporal.api.sdk.v1.ExternalStorageReference`, the
//!   proto-JSON `{"claimData": {...}, "driverName": "aws.s3driver"}` (what every SDK writes
//!   today, and what Overspill writes: for S3 claims, byte for byte what Python writes);
//! - `encoding: json/external-storage-reference`, `{"driver_claim": {"claim_data": {...}},
//!   "driver_name": ...}` (the legacy form of in-flight workflows);
//! - either of them with the metadata marker `__temporal_external_storage_reference: true`,
//!   which a later SDK sets on references it also passes through its payload codec. A marked
//!   payload in neither form is still codec-encoded, and is refused (Overspill has no codec).

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use temporalio_common::protos::temporal::api::common::v1::Payload;
use temporalio_common::protos::temporal::api::common::v1::payload::ExternalPayloadDetails;

use super::ExternalStorageError;

/// The `messageType` of a reference payload.
pub const MESSAGE_TYPE: &str = "temporal.api.sdk.v1.ExternalStorageReference";
/// The encoding of the legacy reference form (read, never written).
const LEGACY_ENCODING: &str = "json/external-storage-reference";
/// The metadata marker of a reference that went through a payload codec.
pub(super) const MARKER_KEY: &str = "__temporal_external_storage_reference";

const ENCODING_KEY: &str = "encoding";
const MESSAGE_TYPE_KEY: &str = "messageType";
const PROTO_JSON: &str = "json/protobuf";

/// A reference to a payload stored elsewhere: the driver to ask and its claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The driver's name (`aws.s3driver`, `gcp.gcsdriver`).
    pub driver_name: String,
    /// The driver's claim (for the S3 driver: `bucket`, `key`, `hash_algorithm`, `hash_value`).
    pub claim: BTreeMap<String, String>,
    /// The stored payload's size in bytes, when the reference states it.
    pub size_bytes: Option<u64>,
}

/// `ExternalStorageReference` in the proto3 JSON mapping, as read ([`Reference::to_payload`]
/// writes its fields in the order Python writes them).
#[derive(Deserialize)]
struct ProtoJson {
    #[serde(rename = "claimData", alias = "claim_data", default)]
    claim_data: BTreeMap<String, String>,
    #[serde(rename = "driverName", alias = "driver_name", default)]
    driver_name: String,
}

/// The legacy form: a JSON dataclass `{driver_name, driver_claim: {claim_data}}`.
#[derive(Deserialize)]
struct Legacy {
    driver_name: String,
    driver_claim: LegacyClaim,
}

#[derive(Deserialize)]
struct LegacyClaim {
    claim_data: BTreeMap<String, String>,
}

impl Reference {
    /// The reference `payload` is; `None` for an ordinary payload.
    ///
    /// ```
    /// use overspill::external_storage::Reference;
    /// # use temporalio_common::protos::temporal::api::common::v1::Payload;
    /// let reference = Reference {
    ///     driver_name: "aws.s3driver".into(),
    ///     claim: [("bucket".to_owned(), "b".to_owned())].into(),
    ///     size_bytes: Some(300_000),
    /// };
    /// assert_eq!(Reference::from_payload(&reference.to_payload()).unwrap(), Some(reference));
    /// assert_eq!(Reference::from_payload(&Payload::default()).unwrap(), None);
    /// ```
    pub fn from_payload(payload: &Payload) -> Result<Option<Self>, ExternalStorageError> {
        let meta = |key: &str| payload.metadata.get(key).map(Vec::as_slice);
        let encoding = meta(ENCODING_KEY);
        let (driver_name, claim) = if encoding == Some(PROTO_JSON.as_bytes())
            && meta(MESSAGE_TYPE_KEY) == Some(MESSAGE_TYPE.as_bytes())
        {
            let parsed: ProtoJson = parse(&payload.data)?;
            (parsed.driver_name, parsed.claim_data)
        } else if encoding == Some(LEGACY_ENCODING.as_bytes()) {
            let parsed: Legacy = parse(&payload.data)?;
            (parsed.driver_name, parsed.driver_claim.claim_data)
        } else if meta(MARKER_KEY) == Some(b"true") {
            return Err(ExternalStorageError::EncodedReference {
                encoding: String::from_utf8_lossy(encoding.unwrap_or_default()).into_owned(),
            });
        } else {
            return Ok(None);
        };
        Ok(Some(Self {
            driver_name,
            claim,
            size_bytes: payload
                .external_payloads
                .first()
                .and_then(|d| u64::try_from(d.size_bytes).ok()),
        }))
    }

    /// Whether `payload` is a reference in any form (a cheap check, no parsing).
    pub fn is_reference(payload: &Payload) -> bool {
        let meta = |key: &str| payload.metadata.get(key).map(Vec::as_slice);
        meta(MARKER_KEY) == Some(b"true")
            || meta(ENCODING_KEY) == Some(LEGACY_ENCODING.as_bytes())
            || (meta(ENCODING_KEY) == Some(PROTO_JSON.as_bytes())
                && meta(MESSAGE_TYPE_KEY) == Some(MESSAGE_TYPE.as_bytes()))
    }

    /// The reference as the payload Python's SDK writes (`json/protobuf`, compact proto-JSON,
    /// `external_payloads[0].size_bytes`).
    pub fn to_payload(&self) -> Payload {
        let json = serde_json::json!({"claimData": self.claim, "driverName": self.driver_name});
        Payload {
            metadata: HashMap::from([
                (ENCODING_KEY.to_owned(), PROTO_JSON.into()),
                (MESSAGE_TYPE_KEY.to_owned(), MESSAGE_TYPE.into()),
            ]),
            data: json.to_string().into_bytes(),
            external_payloads: (self.size_bytes.iter())
                .map(|&size| ExternalPayloadDetails {
                    size_bytes: i64::try_from(size).unwrap_or(i64::MAX),
                })
                .collect(),
        }
    }

    /// The claim's `name` field, or an error naming it.
    pub(crate) fn claim_field(&self, name: &str) -> Result<&str, ExternalStorageError> {
        self.claim.get(name).map(String::as_str).ok_or_else(|| {
            ExternalStorageError::InvalidReference(format!(
                "the {} claim has no {name:?}",
                self.driver_name
            ))
        })
    }
}

fn parse<T: for<'de> Deserialize<'de>>(data: &[u8]) -> Result<T, ExternalStorageError> {
    serde_json::from_slice(data).map_err(|e| ExternalStorageError::InvalidReference(e.to_string()))
}
