//! The model tools beyond the reference's `read_tool_result`: `grep_tool_result` (the lines of a
//! spill matching a pattern, with context) and `list_tool_results` (a run's spills, newest
//! first). Both return the model-visible text, and both fail as `read_tool_result` does: a bad
//! argument is a non-retryable `ModelRetry`, a store failure `StoreUnavailable` (retryable).

use std::time::SystemTime;

use super::proto::{ProtoForm, pb};
use super::{Failure, OverspillActivities};
use crate::api::{GrepResponse, ListResponse};
use crate::read::{self, DEFAULT_GREP_LIMIT, GrepRequest, ReadOutcomeError};
use crate::store::{DEFAULT_LIST_LIMIT, ListRequest};

impl OverspillActivities {
    /// Grep a spill (the body of [`super::GREP_TOOL_RESULT`], without Temporal).
    pub async fn grep_request(&self, request: GrepRequest) -> Result<GrepResponse, Failure> {
        read::grep_tool_result(self.store().as_ref(), &request)
            .await
            .map(GrepResponse)
            .map_err(|e| read_failure(&e))
    }

    /// List a run's spills (the body of [`super::LIST_TOOL_RESULTS`], without Temporal);
    /// `workflow_run_id` fills a missing `run_id`.
    pub async fn list_request(
        &self,
        mut request: ListRequest,
        workflow_run_id: Option<&str>,
    ) -> Result<ListResponse, Failure> {
        if request.run_id.is_empty() {
            request.run_id = workflow_run_id.unwrap_or_default().to_owned();
        }
        let listing = self
            .store()
            .list_run(&request)
            .await
            .map_err(|e| read_failure(&e))?;
        Ok(ListResponse(listing.render(SystemTime::now())))
    }
}

/// The activity failure for a read that could not be served.
pub(crate) fn read_failure(error: &ReadOutcomeError) -> Failure {
    match error {
        ReadOutcomeError::Retry(retry) => Failure::model_retry(retry.to_string()),
        ReadOutcomeError::Store(e) => Failure::store(e),
    }
}

impl ProtoForm for GrepRequest {
    type Pb = pb::GrepToolResultRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.GrepToolResultRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            handle: pb.handle,
            pattern: pb.pattern,
            regex: pb.regex,
            ignore_case: pb.ignore_case,
            context: pb.context,
            offset: pb.offset,
            limit: pb.limit.unwrap_or(DEFAULT_GREP_LIMIT),
            from_end: pb.from_end,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::GrepToolResultRequest {
            handle: self.handle.clone(),
            pattern: self.pattern.clone(),
            regex: self.regex,
            ignore_case: self.ignore_case,
            context: self.context,
            offset: self.offset,
            limit: Some(self.limit),
            from_end: self.from_end,
        }
    }
}

impl ProtoForm for ListRequest {
    type Pb = pb::ListToolResultsRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.ListToolResultsRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            run_id: pb.run_id,
            limit: pb.limit.unwrap_or(DEFAULT_LIST_LIMIT),
            tool_names: pb.tool_names,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::ListToolResultsRequest {
            run_id: self.run_id.clone(),
            limit: Some(self.limit),
            tool_names: self.tool_names.clone(),
        }
    }
}

/// A text response's protobuf form: the message's one `text` field.
macro_rules! text_response {
    ($form:ident, $pb:ident, $name:literal) => {
        impl ProtoForm for $form {
            type Pb = pb::$pb;
            const MESSAGE_TYPE: &'static str = $name;
            fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
                Ok(Self(pb.text))
            }
            fn to_pb(&self) -> Self::Pb {
                pb::$pb {
                    text: self.0.clone(),
                }
            }
        }
    };
}

text_response!(
    GrepResponse,
    GrepToolResultResponse,
    "overspill.v1.GrepToolResultResponse"
);
text_response!(
    ListResponse,
    ListToolResultsResponse,
    "overspill.v1.ListToolResultsResponse"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activities::proto::ProtoForm;

    #[test]
    fn grep_and_list_requests_round_trip_through_protobuf() {
        let grep = GrepRequest {
            handle: "r/c.0".into(),
            pattern: "ERR".into(),
            regex: true,
            context: 2,
            from_end: true,
            ..GrepRequest::default()
        };
        assert_eq!(
            GrepRequest::from_proto_binary(&grep.to_proto_binary()).expect("decodes"),
            grep
        );
        let camel =
            br#"{"handle":"r/c.0","pattern":"ERR","regex":true,"context":"2","fromEnd":true}"#;
        assert_eq!(GrepRequest::from_proto_json(camel).expect("decodes"), grep);
        let list = ListRequest {
            run_id: "run-1".into(),
            limit: 5,
            tool_names: [("call-1".to_owned(), "cat".to_owned())].into(),
        };
        assert_eq!(
            ListRequest::from_proto_json(&list.to_proto_json()).expect("decodes"),
            list
        );
        let default = ListRequest::from_proto_json(br#"{"runId":"r"}"#).expect("decodes");
        assert_eq!(default.limit, DEFAULT_LIST_LIMIT);
    }
}
