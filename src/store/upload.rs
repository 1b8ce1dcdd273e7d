//! Multipart uploads that never outlive their call: an upload that fails, or whose future is
//! dropped (a deadline passed, the activity was cancelled), is aborted, so its parts do not
//! linger in the bucket.

use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::path::Path;
use object_store::{
    Attributes, MultipartUpload, ObjectStore, PutMultipartOptions, PutResult, UploadPart,
};

/// Upload `data` with `attributes` to `path` in `part_size` parts (zero-copy slices), `concurrency` at a time;
/// returns the completed object's tag and version. Aborting a failed or dropped upload may take
/// up to `abort_timeout`, in the background.
pub(super) async fn put_multipart(
    fs: &dyn ObjectStore,
    path: &Path,
    data: Bytes,
    attributes: Attributes,
    part_size: usize,
    concurrency: usize,
    abort_timeout: Duration,
) -> object_store::Result<PutResult> {
    let upload = fs
        .put_multipart_opts(
            path,
            PutMultipartOptions {
                attributes,
                ..PutMultipartOptions::default()
            },
        )
        .await?;
    let mut upload = AbortOnDrop {
        upload: Some(upload),
        abort_timeout,
    };
    let parts: Vec<Bytes> = (0..data.len())
        .step_by(part_size)
        .map(|start| data.slice(start..(start + part_size).min(data.len())))
        .collect();
    futures::stream::iter(parts)
        .map(|part| upload.put_part(part))
        .buffer_unordered(concurrency)
        .try_collect::<()>()
        .await?;
    upload.complete().await
}

/// An upload in progress: aborted in the background when dropped before it completed.
struct AbortOnDrop {
    /// `None` once completed.
    upload: Option<Box<dyn MultipartUpload>>,
    abort_timeout: Duration,
}

impl AbortOnDrop {
    fn put_part(&mut self, part: Bytes) -> UploadPart {
        match &mut self.upload {
            Some(upload) => upload.put_part(part.into()),
            None => Box::pin(std::future::ready(Err(finished()))),
        }
    }

    /// Complete the upload; a failed completion is aborted too.
    async fn complete(mut self) -> object_store::Result<PutResult> {
        let upload = self.upload.as_mut().ok_or_else(finished)?;
        let completed = upload.complete().await?;
        self.upload = None;
        Ok(completed)
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        let Some(mut upload) = self.upload.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let timeout = self.abort_timeout;
        runtime.spawn(async move {
            match tokio::time::timeout(timeout, upload.abort()).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::debug!(target: "overspill::store", "aborting a multipart upload failed: {error}");
                }
                Err(_) => {
                    tracing::debug!(target: "overspill::store", "aborting a multipart upload timed out");
                }
            }
        });
    }
}

fn finished() -> object_store::Error {
    object_store::Error::Generic {
        store: "overspill",
        source: "the multipart upload is already complete".into(),
    }
}
