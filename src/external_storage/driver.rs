//! The blob-store drivers' claims and keys, as temporalio 1.35's `S3StorageDriver` and
//! `GCSStorageDriver` write them.
//!
//! A stored payload's key is content-addressed and scoped by who it belongs to:
//!
//! | scope | key |
//! |---|---|
//! | a workflow (its payloads, and results of the activities it started) | `v0/ns/{ns}/wt/{workflow type}/wi/{workflow id}/ri/{run id}/d/sha256/{hex}` |
//! | a standalone activity | `v0/ns/{ns}/at/{activity type}/ai/{activity id}/ri/{run id}/d/sha256/{hex}` |
//! | a namespace only (also the fallback when a key would pass 1,024 bytes) | `v0/ns/{ns}/d/sha256/{hex}` |
//! | nothing known | `v0/d/sha256/{hex}` |
//!
//! Segments are percent-encoded (each driver its own way); a missing value is the literal `null`.
//! `{hex}` is the lower-case SHA-256 of the serialized payload, which the claim also carries.

use std::collections::BTreeMap;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::{ExternalStorageError, Reference};

/// S3's safe key characters are `0-9a-zA-Z!-_.*'()`; every other byte is escaped.
const S3_UNSAFE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// The characters the GCS driver escapes (besides control characters).
const GCS_UNSAFE: &str = "#[]*?:\"<>|/%";

/// S3 and GCS both cap an object name at 1,024 bytes.
const MAX_KEY_BYTES: usize = 1024;

/// The only hash algorithm the drivers use.
const HASH_ALGORITHM: &str = "sha256";

/// Which of Temporal's blob-store drivers a storage speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// `aws.s3driver`: claims `bucket`, `key`, `hash_algorithm`, `hash_value`.
    S3,
    /// `gcp.gcsdriver`: claims `bucket`, `object_name`, `hash_algorithm`, `hash_value`.
    Gcs,
}

/// Whose payload is stored: the segments of its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScope<'a> {
    /// Nothing known: `v0/d/sha256/{hex}`.
    Unscoped,
    /// A namespace only: `v0/ns/{ns}/d/sha256/{hex}`.
    Namespace(&'a str),
    /// A workflow, or an activity a workflow started.
    Workflow {
        /// The namespace.
        namespace: &'a str,
        /// The workflow type.
        workflow_type: Option<&'a str>,
        /// The workflow id.
        workflow_id: Option<&'a str>,
        /// The run id.
        run_id: Option<&'a str>,
    },
    /// A standalone activity.
    Activity {
        /// The namespace.
        namespace: &'a str,
        /// The activity type.
        activity_type: Option<&'a str>,
        /// The activity id.
        activity_id: Option<&'a str>,
        /// The activity's run id.
        run_id: Option<&'a str>,
    },
}

/// Where a claim says its payload is, and the hash it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<'a> {
    /// The bucket.
    pub bucket: &'a str,
    /// The object key.
    pub key: &'a str,
    /// The lower-case hex SHA-256 the object must hash to.
    pub sha256: &'a str,
}

/// The root of the keys under `prefix` (empty, or a path without slashes at its ends).
pub(super) fn key_root(prefix: &str) -> String {
    match prefix {
        "" => "v0".to_owned(),
        prefix => format!("{prefix}/v0"),
    }
}

impl Located<'_> {
    /// `bucket/key`, as errors name the object.
    pub fn object(&self) -> String {
        format!("{}/{}", self.bucket, self.key)
    }
}

impl Driver {
    /// The driver's name in references.
    pub fn name(self) -> &'static str {
        match self {
            Self::S3 => "aws.s3driver",
            Self::Gcs => "gcp.gcsdriver",
        }
    }

    /// The claim field holding the object key.
    fn key_field(self) -> &'static str {
        match self {
            Self::S3 => "key",
            Self::Gcs => "object_name",
        }
    }

    /// One key segment, escaped as this driver escapes it (`None` for an empty value).
    ///
    /// ```
    /// use overspill::external_storage::Driver;
    /// assert_eq!(Driver::S3.encode_segment("My Wf/ü").as_deref(), Some("My%20Wf%2F%C3%BC"));
    /// assert_eq!(Driver::Gcs.encode_segment("My Wf/ü").as_deref(), Some("My Wf%2Fü"));
    /// assert_eq!(Driver::S3.encode_segment(""), None);
    /// ```
    pub fn encode_segment(self, value: &str) -> Option<String> {
        if value.is_empty() {
            return None;
        }
        Some(match self {
            Self::S3 => utf8_percent_encode(value, S3_UNSAFE).to_string(),
            Self::Gcs => {
                let escape = |c: char| match GCS_UNSAFE.contains(c) || c.is_control() {
                    true => utf8_percent_encode(c.encode_utf8(&mut [0; 4]), NON_ALPHANUMERIC)
                        .to_string(),
                    false => c.to_string(),
                };
                let out: String = value.chars().map(escape).collect();
                match out.as_str() {
                    "." => "%2E".to_owned(),
                    ".." => "%2E%2E".to_owned(),
                    _ => out,
                }
            }
        })
    }

    /// The key of a payload hashing to `sha256` in `scope`, under `prefix` (empty, or a path
    /// without slashes at its ends). A key over 1,024 bytes falls back to the namespace's.
    pub fn object_key(self, prefix: &str, scope: &KeyScope<'_>, sha256: &str) -> String {
        let segment = |value: Option<&str>| {
            value
                .and_then(|v| self.encode_segment(v))
                .unwrap_or_else(|| "null".to_owned())
        };
        let (namespace, context) = match *scope {
            KeyScope::Unscoped => (None, vec![]),
            KeyScope::Namespace(ns) => (Some(ns), vec![]),
            KeyScope::Workflow {
                namespace,
                workflow_type,
                workflow_id,
                run_id,
            } => {
                let context = [("wt", workflow_type), ("wi", workflow_id), ("ri", run_id)];
                (Some(namespace), context.to_vec())
            }
            KeyScope::Activity {
                namespace,
                activity_type,
                activity_id,
                run_id,
            } => {
                let context = [("at", activity_type), ("ai", activity_id), ("ri", run_id)];
                (Some(namespace), context.to_vec())
            }
        };
        let namespace =
            namespace.map_or_else(String::new, |ns| format!("/ns/{}", segment(Some(ns))));
        let context: String = (context.into_iter())
            .map(|(name, value)| format!("/{name}/{}", segment(value)))
            .collect();
        let root = key_root(prefix);
        let digest = format!("/d/{HASH_ALGORITHM}/{sha256}");
        let key = format!("{root}{namespace}{context}{digest}");
        if key.len() > MAX_KEY_BYTES {
            format!("{root}{namespace}{digest}")
        } else {
            key
        }
    }

    /// The claim for an object stored at `bucket`/`key`, hashing to `sha256`.
    pub fn claim(self, bucket: &str, key: &str, sha256: &str) -> BTreeMap<String, String> {
        let fields = [
            ("bucket", bucket),
            (self.key_field(), key),
            ("hash_algorithm", HASH_ALGORITHM),
            ("hash_value", sha256),
        ];
        fields.map(|(k, v)| (k.to_owned(), v.to_owned())).into()
    }

    /// Where `reference`'s claim points, checked: this driver's, a SHA-256 hash.
    pub fn locate(self, reference: &Reference) -> Result<Located<'_>, ExternalStorageError> {
        if reference.driver_name != self.name() {
            return Err(ExternalStorageError::UnknownDriver {
                driver: reference.driver_name.clone(),
                served: self.name(),
            });
        }
        let algorithm = reference.claim_field("hash_algorithm")?;
        if algorithm != HASH_ALGORITHM {
            return Err(ExternalStorageError::InvalidReference(format!(
                "unsupported hash algorithm {algorithm:?} (expected sha256)"
            )));
        }
        let sha256 = reference.claim_field("hash_value")?;
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ExternalStorageError::InvalidReference(format!(
                "hash_value {sha256:?} is not a hex SHA-256"
            )));
        }
        Ok(Located {
            bucket: reference.claim_field("bucket")?,
            key: reference.claim_field(self.key_field())?,
            sha256,
        })
    }
}
