//! Activity payloads in the encoding the caller chose, answered in the same encoding.
//!
//! A Python dict or dataclass, a TypeScript object or a Rust serde struct arrives as `json/plain`
//! with snake_case fields. An activity takes its request as a [`Wire`] payload, kept raw so that
//! the activity itself resolves it (an External Storage reference is fetched inside the
//! activity's own task, see [`Wire::resolve`]) and decodes it, failing with a typed,
//! non-retryable error naming the field (a failure inside the SDK would be untyped and retried
//! forever); it answers with a [`Wire`] payload too: the reply encoded like the request came in,
//! or the reference to where it was offloaded.

use std::collections::HashMap;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use temporalio_common::data_converters::{
    PayloadConversionError, SerializationContext, TemporalDeserializable, TemporalSerializable,
};
use temporalio_common::protos::temporal::api::common::v1::Payload;

use super::encoding::Encoding;
use super::errors::Failure;
use super::proto::{self, ProtoForm, decode_json};
use crate::external_storage::{self, ExternalStorage, Reference};
use crate::service::Surface;

/// The payload metadata key naming the encoding.
const ENCODING_KEY: &str = "encoding";
/// The payload metadata key naming a protobuf message's full name.
const MESSAGE_TYPE_KEY: &str = "messageType";

/// An activity payload as it travels, typed by the form it carries: a request taken raw (see
/// [`Wire::decode`]), or a reply encoded like its request (see [`Wire::encode`]) or offloaded to
/// External Storage.
#[derive(Debug, Clone)]
pub struct Wire<T> {
    payload: Payload,
    _message: PhantomData<fn() -> T>,
}

impl<T> Wire<T> {
    /// Wrap a raw payload.
    pub fn new(payload: Payload) -> Self {
        Self {
            payload,
            _message: PhantomData,
        }
    }

    /// The payload.
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The payload, unwrapped.
    pub fn into_payload(self) -> Payload {
        self.payload
    }

    /// The External Storage reference this input is, if it is one.
    pub fn reference(&self) -> Result<Option<Reference>, Failure> {
        Reference::from_payload(&self.payload).map_err(|e| Failure::external_storage(&e))
    }

    /// The payload's data size in bytes (for a reference, the reference's own).
    pub fn payload_bytes(&self) -> u64 {
        self.payload.data.len() as u64
    }

    /// This input with an External Storage reference replaced by the payload it names, fetched
    /// from `storage` (typed failures: see [`Failure::external_storage`]).
    pub async fn resolve(self, storage: Option<&ExternalStorage>) -> Result<Self, Failure> {
        external_storage::resolve(storage, self.payload)
            .await
            .map(Self::new)
            .map_err(|e| Failure::external_storage(&e))
    }

    /// The payload's encoding, or `InvalidInput` for one Overspill does not speak.
    pub fn encoding(&self) -> Result<Encoding, Failure> {
        let raw = self.payload.metadata.get(ENCODING_KEY).map(Vec::as_slice);
        let spoken = [
            Encoding::JsonPlain,
            Encoding::JsonProtobuf,
            Encoding::BinaryProtobuf,
        ];
        spoken
            .into_iter()
            .find(|e| raw == Some(e.as_str().as_bytes()))
            .ok_or_else(|| {
                let raw = raw.map(String::from_utf8_lossy).unwrap_or_default();
                let send = "send json/plain, json/protobuf or binary/protobuf";
                Failure::invalid_input(
                    Surface::Activity,
                    "encoding",
                    format!("unsupported payload encoding {raw:?}; {send}"),
                )
            })
    }
}

impl<T: ProtoForm + DeserializeOwned> Wire<T> {
    /// Decode the request, returning it with the encoding to answer in. Consumes the payload,
    /// so its bytes are freed as soon as the request is decoded.
    pub fn decode(self) -> Result<(T, Encoding), Failure> {
        let encoding = self.encoding()?;
        let message_type = self.payload.metadata.get(MESSAGE_TYPE_KEY);
        if let Some(message_type) = message_type.filter(|_| encoding != Encoding::JsonPlain)
            && message_type.as_slice() != T::MESSAGE_TYPE.as_bytes()
        {
            let got = String::from_utf8_lossy(message_type);
            let problem = format!("expected {}, got {got}", T::MESSAGE_TYPE);
            return Err(Failure::invalid_input(
                Surface::Activity,
                "messageType",
                problem,
            ));
        }
        let data = &self.payload.data;
        let value = match encoding {
            Encoding::JsonPlain => decode_json(&mut serde_json::Deserializer::from_slice(data))?,
            protobuf => proto::from_protobuf(data, protobuf)?,
        };
        Ok((value, encoding))
    }
}

impl<T: ProtoForm + Serialize> Wire<T> {
    /// `value` encoded in `encoding` (the protobuf encodings name the message).
    pub fn encode(value: &T, encoding: Encoding) -> Result<Self, PayloadConversionError> {
        let data = match encoding {
            Encoding::JsonPlain => serde_json::to_vec(value).map_err(Into::into),
            protobuf => proto::to_protobuf(value, protobuf),
        };
        let data = data.map_err(PayloadConversionError::EncodingError)?;
        let mut metadata = HashMap::from([(ENCODING_KEY.to_owned(), encoding.as_str().into())]);
        if encoding != Encoding::JsonPlain {
            metadata.insert(MESSAGE_TYPE_KEY.to_owned(), T::MESSAGE_TYPE.into());
        }
        Ok(Self::new(Payload {
            metadata,
            data,
            external_payloads: vec![],
        }))
    }
}

impl<T: 'static> TemporalDeserializable for Wire<T> {
    fn from_payload(
        _: &SerializationContext<'_>,
        payload: Payload,
    ) -> Result<Self, PayloadConversionError> {
        Ok(Self::new(payload))
    }
}

impl<T: 'static> TemporalSerializable for Wire<T> {
    fn to_payload(&self, _: &SerializationContext<'_>) -> Result<Payload, PayloadConversionError> {
        Ok(self.payload.clone())
    }
}
