//! Multipart uploads that never outlive their call: an upload that fails, or whose future is
//! dropped (a deadline passed, the activity was cancelled), is aborted, so its parts do not
//! linger in the bucket.

use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::path::Path;
use object_store::{Attributes, MultipartUpload, ObjectStore, PutResult};

use super::StoreOptions;

/// Upload `data` with `attributes` to `path` in parts of `options`' size (zero-copy slices),
/// `options`' concurrency at a time. Aborting a failed or dropped upload may take up to the
/// per-call timeout, in the background.
pub(super) async fn put_multipart(
    fs: &dyn ObjectStore,
    path: &Path,
    data: Bytes,
    attributes: Attributes,
    options: &StoreOptions,
) -> object_store::Result<PutResult> {
    let part_size = options.part_size.max(1);
    let mut pending = AbortOnDrop {
        upload: None,
        abort_timeout: options.timeout,
    };
    let upload = pending
        .upload
        .insert(fs.put_multipart_opts(path, attributes.into()).await?);
    let parts: Vec<_> = (data.chunks(part_size))
        .map(|part| upload.put_part(data.slice_ref(part).into()))
        .collect();
    futures::stream::iter(parts)
        .buffer_unordered(options.part_concurrency.max(1))
        .try_collect::<()>()
        .await?;
    let completed = upload.complete().await?;
    pending.upload = None;
    Ok(completed)
}

/// An upload in progress (`None` once completed): aborted in the background when dropped.
struct AbortOnDrop {
    upload: Option<Box<dyn MultipartUpload>>,
    abort_timeout: Duration,
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        let (Some(mut upload), Ok(runtime)) =
            (self.upload.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let timeout = self.abort_timeout;
        runtime.spawn(async move {
            let failed = match tokio::time::timeout(timeout, upload.abort()).await {
                Ok(Ok(())) => return,
                Ok(Err(error)) => format!("failed: {error}"),
                Err(_) => "timed out".to_owned(),
            };
            tracing::debug!(target: "overspill::store", "aborting a multipart upload {failed}");
        });
    }
}
