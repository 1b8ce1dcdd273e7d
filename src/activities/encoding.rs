//! How an activity payload is encoded: the `encoding` metadata value.

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
