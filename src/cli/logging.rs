//! The `tracing` subscriber of the commands that log: `RUST_LOG` filters, to stderr, in text or
//! JSON.

/// Log format for [`init_logging`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Install the `tracing` subscriber: `RUST_LOG` filters (default `default_filter`, e.g. `info`),
/// to stderr, coloured only when stderr is a terminal and `NO_COLOR` is unset.
///
/// Without `RUST_LOG` (or with an empty or invalid one, which is reported), spans are off: the
/// Temporal SDK opens several for every activity task, and recording their fields was 5 % of a
/// busy worker's CPU. Events still show, the SDK's included; `RUST_LOG=info` brings spans back.
pub(crate) fn init_logging(format: LogFormat, default_filter: &str) {
    use std::io::{IsTerminal as _, stderr};
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = std::env::var("RUST_LOG").ok().filter(|f| !f.is_empty());
    let ansi = stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let subscriber = log_subscriber(format, filter.as_deref(), default_filter, ansi, stderr);
    // Fails only when a subscriber is already set (a test, a program embedding the worker):
    // theirs stays.
    let _ = subscriber.try_init();
}

/// The subscriber [`init_logging`] installs, writing to `writer`: `filter` is `RUST_LOG`;
/// one that does not parse is reported on stderr and `default_filter` used instead.
fn log_subscriber<W>(
    format: LogFormat,
    filter: Option<&str>,
    default_filter: &str,
    ansi: bool,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::filter::{EnvFilter, FilterExt as _, LevelFilter, filter_fn};
    use tracing_subscriber::layer::{Layer as _, SubscriberExt as _};
    let parsed = filter.map(|f| {
        EnvFilter::try_new(f).inspect_err(|e| {
            eprintln!("overspill: RUST_LOG={f:?} is not a filter ({e}); using {default_filter:?}");
        })
    });
    let (filter, spans) = match parsed {
        Some(Ok(filter)) => (filter, true),
        _ => (EnvFilter::new(default_filter), false),
    };
    // TRACE keeps the EnvFilter's level hint (the lower of the two): `log` and `tracing` skip
    // what is below it at the call site, without asking the filter.
    let spans =
        filter_fn(move |meta| spans || !meta.is_span()).with_max_level_hint(LevelFilter::TRACE);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi);
    let layer = match format {
        LogFormat::Text => layer.boxed(),
        LogFormat::Json => layer.json().boxed(),
    };
    tracing_subscriber::registry().with(layer.with_filter(filter.and(spans)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// What a subscriber built by [`log_subscriber`] writes while `log` runs.
    fn logged(filter: Option<&str>, ansi: bool, log: impl FnOnce()) -> String {
        let out = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = out.clone();
        let writer = move || SharedWriter(sink.clone());
        let subscriber = log_subscriber(LogFormat::Text, filter, "info", ansi, writer);
        tracing::subscriber::with_default(subscriber, log);
        let bytes = out.lock().expect("the log").clone();
        String::from_utf8(bytes).expect("UTF-8 logs")
    }

    struct SharedWriter(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for SharedWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("the log").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn log_in_a_span() {
        let span = tracing::info_span!("RunActivity", temporalActivityID = "a1");
        let disabled = span.is_disabled();
        span.in_scope(|| tracing::warn!("inside; span disabled: {disabled}"));
        tracing::debug!("not at the default level");
    }

    #[test]
    fn spans_are_off_unless_rust_log_is_set() {
        let plain = logged(None, false, log_in_a_span);
        assert!(plain.contains("inside; span disabled: true"), "{plain}");
        assert!(!plain.contains("RunActivity"), "{plain}");
        assert!(!plain.contains("not at the default level"), "{plain}");
        let with_spans = logged(Some("info"), false, log_in_a_span);
        assert!(
            with_spans.contains("RunActivity{temporalActivityID=\"a1\"}: "),
            "{with_spans}"
        );
        let debug = logged(Some("debug"), false, log_in_a_span);
        assert!(debug.contains("not at the default level"), "{debug}");
        let invalid = logged(Some("info,x=bogus"), false, log_in_a_span);
        assert!(invalid.contains("span disabled: true"), "{invalid}");
    }

    /// Call sites below the filter's level are skipped without asking it (`log`'s too).
    #[test]
    fn the_level_hint_is_the_filters() {
        use tracing::Subscriber as _;
        use tracing_subscriber::filter::LevelFilter;
        let hint = |filter| {
            log_subscriber(LogFormat::Text, filter, "info", false, std::io::sink).max_level_hint()
        };
        assert_eq!(hint(None), Some(LevelFilter::INFO));
        assert_eq!(hint(Some("warn")), Some(LevelFilter::WARN));
    }

    #[test]
    fn colours_only_when_asked() {
        assert!(!logged(None, false, log_in_a_span).contains('\x1b'));
        assert!(logged(None, true, log_in_a_span).contains('\x1b'));
    }
}
