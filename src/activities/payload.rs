//! Activity payloads in the encoding the caller chose, answered in the same encoding.
//!
//! A Python dict or dataclass, a TypeScript object or a Rust serde struct arrives as `json/plain`
//! with snake_case fields. [`Incoming`] keeps the raw payload so that the activity itself decodes
//! it and can fail with a non-retryable `InvalidInput` naming the field (a decoding failure inside
//! the SDK would be retried forever); [`Outgoing`] encodes the reply like the request came in.

use std::collections::HashMap;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use temporalio_common::data_converters::{
    PayloadConversionError, SerializationContext, TemporalDeserializable, TemporalSerializable,
};
use temporalio_common::protos::temporal::api::common::v1::Payload;

use super::errors::Failure;
use super::proto::ProtoMessage;

/// The payload metadata key naming the encoding.
const ENCODING_KEY: &str = "encoding";
/// The payload metadata key naming a protobuf message's full name.
const MESSAGE_TYPE_KEY: &str = "messageType";

/// How a payload is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// `json/plain`: plain JSON, snake_case fields.
    #[default]
    JsonPlain,
    /// `json/protobuf`: the proto3 JSON mapping of a `proto/` message, with `messageType`.
    JsonProtobuf,
    /// `binary/protobuf`: the protobuf wire form of a `proto/` message, with `messageType`.
    BinaryProtobuf,
}

impl Encoding {
    /// The `encoding` metadata value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonPlain => "json/plain",
            Self::JsonProtobuf => "json/protobuf",
            Self::BinaryProtobuf => "binary/protobuf",
        }
    }
}

/// A request payload, decoded by the activity (see [`Incoming::decode`]).
#[derive(Debug, Clone)]
pub struct Incoming<T> {
    payload: Payload,
    _message: PhantomData<fn() -> T>,
}

impl<T> Incoming<T> {
    /// Wrap a raw payload.
    pub fn new(payload: Payload) -> Self {
        Self {
            payload,
            _message: PhantomData,
        }
    }

    /// The payload's encoding, or `InvalidInput` for one Overspill does not speak.
    pub fn encoding(&self) -> Result<Encoding, Failure> {
        let raw = self.payload.metadata.get(ENCODING_KEY);
        match raw.map(Vec::as_slice) {
            Some(b"json/plain") => Ok(Encoding::JsonPlain),
            Some(b"json/protobuf") => Ok(Encoding::JsonProtobuf),
            Some(b"binary/protobuf") => Ok(Encoding::BinaryProtobuf),
            other => Err(Failure::invalid_input(
                "encoding",
                format!(
                    "unsupported payload encoding {:?}; send json/plain, json/protobuf or binary/protobuf",
                    other.map(String::from_utf8_lossy).unwrap_or_default()
                ),
            )),
        }
    }
}

impl<T: DeserializeOwned + ProtoMessage> Incoming<T> {
    /// Decode the request, returning it with the encoding to answer in. Consumes the payload, so
    /// its bytes are freed before the request is worked on.
    pub fn decode(self) -> Result<(T, Encoding), Failure> {
        let encoding = self.encoding()?;
        let value = match encoding {
            Encoding::JsonPlain => decode_json(&self.payload.data)?,
            Encoding::JsonProtobuf | Encoding::BinaryProtobuf => {
                if let Some(message_type) = self.payload.metadata.get(MESSAGE_TYPE_KEY)
                    && message_type.as_slice() != T::MESSAGE_TYPE.as_bytes()
                {
                    return Err(Failure::invalid_input(
                        "messageType",
                        format!(
                            "expected {}, got {}",
                            T::MESSAGE_TYPE,
                            String::from_utf8_lossy(message_type)
                        ),
                    ));
                }
                if encoding == Encoding::JsonProtobuf {
                    T::from_proto_json(&self.payload.data)?
                } else {
                    T::from_proto_binary(&self.payload.data)?
                }
            }
        };
        Ok((value, encoding))
    }
}

/// Decode plain JSON, naming the offending field in the error.
pub(crate) fn decode_json<T: DeserializeOwned>(data: &[u8]) -> Result<T, Failure> {
    let de = &mut serde_json::Deserializer::from_slice(data);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        Failure::invalid_input(&path, e.into_inner().to_string())
    })
}

impl<T: 'static> TemporalDeserializable for Incoming<T> {
    fn from_payload(
        _: &SerializationContext<'_>,
        payload: Payload,
    ) -> Result<Self, PayloadConversionError> {
        Ok(Self::new(payload))
    }
}

impl<T: 'static> TemporalSerializable for Incoming<T> {
    fn to_payload(&self, _: &SerializationContext<'_>) -> Result<Payload, PayloadConversionError> {
        Ok(self.payload.clone())
    }
}

/// A reply, encoded like the request it answers.
#[derive(Debug, Clone)]
pub struct Outgoing<T> {
    /// The reply.
    pub value: T,
    /// The encoding to send it in.
    pub encoding: Encoding,
}

impl<T> Outgoing<T> {
    /// A reply in `encoding`.
    pub fn new(value: T, encoding: Encoding) -> Self {
        Self { value, encoding }
    }
}

impl<T: Serialize + ProtoMessage + 'static> Outgoing<T> {
    /// The payload for this reply.
    pub fn to_raw_payload(&self) -> Result<Payload, PayloadConversionError> {
        let (data, message_type) = match self.encoding {
            Encoding::JsonPlain => (
                serde_json::to_vec(&self.value)
                    .map_err(|e| PayloadConversionError::EncodingError(Box::new(e)))?,
                None,
            ),
            Encoding::JsonProtobuf => (self.value.to_proto_json(), Some(T::MESSAGE_TYPE)),
            Encoding::BinaryProtobuf => (self.value.to_proto_binary(), Some(T::MESSAGE_TYPE)),
        };
        let mut metadata = HashMap::from([(
            ENCODING_KEY.to_owned(),
            self.encoding.as_str().as_bytes().to_vec(),
        )]);
        if let Some(message_type) = message_type {
            metadata.insert(
                MESSAGE_TYPE_KEY.to_owned(),
                message_type.as_bytes().to_vec(),
            );
        }
        Ok(Payload {
            metadata,
            data,
            external_payloads: vec![],
        })
    }
}

impl<T: Serialize + ProtoMessage + 'static> TemporalSerializable for Outgoing<T> {
    fn to_payload(&self, _: &SerializationContext<'_>) -> Result<Payload, PayloadConversionError> {
        self.to_raw_payload()
    }
}

impl<T: DeserializeOwned + ProtoMessage + 'static> TemporalDeserializable for Outgoing<T> {
    fn from_payload(
        _: &SerializationContext<'_>,
        payload: Payload,
    ) -> Result<Self, PayloadConversionError> {
        let incoming = Incoming::<T>::new(payload);
        incoming
            .decode()
            .map(|(value, encoding)| Self { value, encoding })
            .map_err(|e| PayloadConversionError::EncodingError(Box::new(e)))
    }
}
