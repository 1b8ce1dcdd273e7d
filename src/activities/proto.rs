//! The protobuf forms of the activity messages (`proto/overspill/v1/`), for callers that send
//! `json/protobuf` or `binary/protobuf` payloads.

use super::errors::Failure;
use super::types::{
    ReadResponse, SpillRequest, SpillResponse, SummarizeRequest, SummarizeResponse,
};
use crate::api::{ReduceRequest, ReduceResponse};
use crate::read::ReadRequest;

/// A message with a protobuf form named `MESSAGE_TYPE`.
pub trait ProtoMessage: Sized {
    /// The full protobuf message name (the payload's `messageType`).
    const MESSAGE_TYPE: &'static str;
    /// Decode the protobuf wire form.
    fn from_proto_binary(data: &[u8]) -> Result<Self, Failure>;
    /// Decode the proto3 JSON form.
    fn from_proto_json(data: &[u8]) -> Result<Self, Failure>;
    /// Encode the protobuf wire form.
    fn to_proto_binary(&self) -> Vec<u8>;
    /// Encode the proto3 JSON form.
    fn to_proto_json(&self) -> Vec<u8>;
}

macro_rules! json_only {
    ($($ty:ty => $name:literal),* $(,)?) => {$(
        impl ProtoMessage for $ty {
            const MESSAGE_TYPE: &'static str = $name;
            fn from_proto_binary(_: &[u8]) -> Result<Self, Failure> {
                Err(Failure::invalid_input("encoding", "binary/protobuf is not supported yet; send json/plain"))
            }
            fn from_proto_json(_: &[u8]) -> Result<Self, Failure> {
                Err(Failure::invalid_input("encoding", "json/protobuf is not supported yet; send json/plain"))
            }
            fn to_proto_binary(&self) -> Vec<u8> {
                Vec::new()
            }
            fn to_proto_json(&self) -> Vec<u8> {
                Vec::new()
            }
        }
    )*};
}

json_only!(
    ReduceRequest => "overspill.v1.ReduceRequest",
    ReduceResponse => "overspill.v1.ReduceResponse",
    SpillRequest => "overspill.v1.SpillRequest",
    SpillResponse => "overspill.v1.SpillResponse",
    SummarizeRequest => "overspill.v1.SummarizeRequest",
    SummarizeResponse => "overspill.v1.SummarizeResponse",
    ReadRequest => "overspill.v1.ReadToolResultRequest",
    ReadResponse => "overspill.v1.ReadToolResultResponse",
);
