//! `overspill read`: exactly what read_tool_result returns for a handle.

use std::io::Write as _;
use std::ops::Range;
use std::process::ExitCode;
use std::sync::Arc;

use bytes::Bytes;
use memmap2::Mmap;
use overspill::limits::StoreError;
use overspill::read::{
    self, Fetched, IndexCache, Part, ReadOutcomeError, ReadRequest, SpillReader, Version,
};
use overspill::store::Store;
use tokio::sync::OnceCell;

use super::CliResult;

/// A page request (`ReadRequest` or `GrepRequest`) and the store it reads.
#[derive(Debug, clap::Args)]
pub(crate) struct Args<R: clap::Args> {
    #[command(flatten)]
    pub(crate) request: R,
    /// The store the spill lives in (see `overspill reduce --help`).
    #[arg(long, env = "OVERSPILL_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,
}

pub(crate) async fn run(args: Args<ReadRequest>) -> CliResult {
    let spills = MappedSpills::new(Store::open(args.store.as_deref())?);
    let page = read::read_tool_result(&spills, &args.request).await;
    print_page(page, spills.store.url())
}

/// A store as one command pages it: the payload of a spill of at least [`MAPPED_BYTES`] in a
/// `file://` store is mapped once and read from the map, with no copy of each chunk through the
/// kernel (a pattern page over 100 MB reads it all); everything else goes to the store.
pub(crate) struct MappedSpills {
    pub(crate) store: Store,
    /// The payload of the first spill asked for, once mapped (`None`: read through the store).
    mapped: OnceCell<Option<Mapped>>,
}

/// Smaller payloads are read: mapping costs more than the copy it saves.
const MAPPED_BYTES: u64 = 1 << 20;

/// A spill's payload, mapped.
struct Mapped {
    handle: String,
    map: Arc<Mmap>,
    version: Version,
}

/// A range of a mapped payload, as the bytes of one read. A large one hands its pages back to
/// the kernel when dropped, so that a scan holds the chunks it is reading, not every page it
/// read (they stay in the page cache).
struct View {
    map: Arc<Mmap>,
    range: Range<usize>,
}

impl AsRef<[u8]> for View {
    fn as_ref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

impl Drop for View {
    fn drop(&mut self) {
        if self.range.len() < MAPPED_BYTES as usize {
            return;
        }
        // SAFETY: the map is a shared, read-only map of a file: a page dropped here is read
        // again from the file on its next access, so another view of it sees the same bytes.
        #[cfg(unix)]
        let _ = unsafe {
            (self.map).unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                self.range.start,
                self.range.len(),
            )
        };
    }
}

impl MappedSpills {
    pub(crate) fn new(store: Store) -> Self {
        Self {
            store,
            mapped: OnceCell::new(),
        }
    }

    /// `handle`'s mapped payload, mapping it on first use.
    async fn mapped(&self, handle: &str) -> Result<Option<&Mapped>, StoreError> {
        let mapped = self
            .mapped
            .get_or_try_init(|| async {
                let Some((file, version)) = self.store.local_payload(handle).await? else {
                    return Ok(None);
                };
                if version.size < MAPPED_BYTES {
                    return Ok(None);
                }
                let map = super::map::map(&file, 0, version.size, "the spill's file");
                Ok::<_, StoreError>(map.map(|map| Mapped {
                    handle: handle.to_owned(),
                    map: Arc::new(map),
                    version,
                }))
            })
            .await?;
        Ok(mapped.as_ref().filter(|m| m.handle == handle))
    }
}

impl SpillReader for MappedSpills {
    async fn head(&self, handle: &str) -> Result<Version, StoreError> {
        match self.mapped(handle).await? {
            Some(mapped) => Ok(mapped.version.clone()),
            None => self.store.head(handle).await,
        }
    }

    async fn fetch(
        &self,
        handle: &str,
        part: Part,
        range: Range<u64>,
    ) -> Result<Fetched, StoreError> {
        let mapped = match part {
            Part::Payload => self.mapped(handle).await?,
            Part::Index => None,
        };
        let len = mapped.map_or(0, |m| m.map.len() as u64);
        let Some(mapped) = mapped.filter(|_| range.start < len.min(range.end)) else {
            // Not mapped, or a range the store refuses: empty, reversed or past the end.
            return self.store.fetch(handle, part, range).await;
        };
        let range = range.start as usize..range.end.min(len) as usize;
        let map = mapped.map.clone();
        Ok(Fetched {
            bytes: Bytes::from_owner(View { map, range }),
            version: mapped.version.clone(),
        })
    }

    async fn put_index(&self, handle: &str, index: Bytes) -> Result<Option<String>, StoreError> {
        self.store.put_index(handle, index).await
    }

    fn index_cache(&self) -> Option<&IndexCache> {
        self.store.index_cache()
    }
}

/// Print a page (and a newline) on stdout; a bad argument is its message on stderr and exit
/// code 2. When the page found nothing, stderr names `store`, the store searched, and the exit
/// code is 1.
pub(crate) fn print_page(page: Result<String, ReadOutcomeError>, store: &str) -> CliResult {
    match page {
        Ok(page) => {
            writeln!(std::io::stdout().lock(), "{page}")?;
            if page.starts_with("[No stored tool result") || page.contains(": 0 spilled tool") {
                eprintln!(
                    "overspill: nothing found in {store} (--store or OVERSPILL_STORE names another)"
                );
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ReadOutcomeError::Retry(retry)) => {
            eprintln!("{retry}");
            Ok(ExitCode::from(2))
        }
        Err(ReadOutcomeError::Store(e)) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use overspill::limits::SpillStore as _;
    use overspill::read::{GrepRequest, grep_tool_result, read_page, read_tool_result};

    use super::*;

    /// Whether this process maps a file whose path ends with `suffix`.
    fn maps(suffix: &str) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        maps.lines().any(|line| line.ends_with(suffix))
    }

    #[tokio::test]
    async fn a_large_local_spill_is_paged_from_its_map_as_from_the_store() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let url = url::Url::from_directory_path(dir.path()).expect("a file URL");
        let store = || Store::open(Some(url.as_str())).expect("the store opens");
        let data: String = (0..60_000)
            .map(|i| format!("{i:06} level=info msg=\"x{}\"\r\n", i % 7))
            .collect();
        assert!(data.len() as u64 >= MAPPED_BYTES);
        store()
            .write("r/mapped-call.0", data.clone().into())
            .await
            .expect("written");
        store()
            .write("r/small-call.0", "a\nb\n".into())
            .await
            .expect("written");

        let requests = [
            ReadRequest::default(),
            ReadRequest {
                offset: 31_000,
                from_end: true,
                ..ReadRequest::default()
            },
            ReadRequest {
                pattern: Some("x3".into()),
                offset: 4_000,
                ..ReadRequest::default()
            },
        ];
        let spills = MappedSpills::new(store());
        for request in requests {
            let request = ReadRequest {
                handle: "r/mapped-call.0".into(),
                ..request
            };
            let page = read_tool_result(&spills, &request).await.expect("a page");
            assert_eq!(page, read_page(data.as_bytes(), &request).expect("a page"));
        }
        assert!(maps("/r/mapped-call.0"), "the payload is mapped");
        // A range the store refuses is refused alike, not sliced out of the map.
        let (len, plain) = (data.len() as u64, store());
        let reversed = Range { start: 10, end: 5 };
        for range in [len..len + 1, 10..10, reversed] {
            let fetched = spills.fetch("r/mapped-call.0", Part::Payload, range.clone());
            let stored = plain.fetch("r/mapped-call.0", Part::Payload, range.clone());
            assert_eq!(
                fetched.await.map(|f| f.bytes).map_err(|e| e.to_string()),
                stored.await.map(|f| f.bytes).map_err(|e| e.to_string()),
                "{range:?}"
            );
        }
        let grep = GrepRequest {
            handle: "r/mapped-call.0".into(),
            pattern: "x6".into(),
            ..GrepRequest::default()
        };
        assert_eq!(
            grep_tool_result(&spills, &grep).await.expect("a page"),
            grep_tool_result(&store(), &grep).await.expect("a page"),
        );

        // Only the first spill asked for is mapped; another is read through the store.
        let small = ReadRequest {
            handle: "r/small-call.0".into(),
            ..ReadRequest::default()
        };
        let page = read_tool_result(&spills, &small).await.expect("a page");
        assert_eq!(page, read_page(b"a\nb\n", &small).expect("a page"));
        assert!(!maps("/r/small-call.0"));
        let unknown = ReadRequest {
            handle: "r/unknown-call.0".into(),
            ..ReadRequest::default()
        };
        let page = read_tool_result(&MappedSpills::new(store()), &unknown).await;
        assert_eq!(
            page.expect("a page"),
            read::no_stored_result(&unknown.handle)
        );
    }
}
