//! Overspill's own Prometheus metrics, served beside the SDK's on the same endpoint:
//! `overspill_spills`, `overspill_spilled_bytes`, `overspill_fallbacks` and
//! `overspill_reductions{kind}` (`truncated`, `spilled`, `summarized`, `passthrough`).

use std::sync::Arc;

use temporalio_common::telemetry::metrics::{
    CoreMeter, Counter, MetricAttributes, MetricKeyValue, MetricParameters, NewAttributes,
};

use crate::limits::ReductionKind;

/// Counters for the activities; the default records nothing.
#[derive(Clone, Default, derive_more::Debug)]
pub struct Metrics(#[debug("{}", _0.is_some())] Option<Arc<Counters>>);

struct Counters {
    spills: Counter,
    spilled_bytes: Counter,
    fallbacks: Counter,
    reductions: Counter,
    plain: MetricAttributes,
    kinds: [MetricAttributes; 4],
}

impl Metrics {
    /// Counters registered with `meter` (the SDK's Prometheus meter).
    pub fn new(meter: &Arc<dyn CoreMeter>) -> Self {
        let counter = |name: &'static str, description: &'static str| {
            meter.counter(
                MetricParameters::builder()
                    .name(name)
                    .description(description)
                    .build(),
            )
        };
        let kind = |k: &'static str| {
            meter.new_attributes(NewAttributes::from([MetricKeyValue::new("kind", k)]))
        };
        Self(Some(Arc::new(Counters {
            spills: counter("overspill_spills", "Payloads written to the spill store"),
            spilled_bytes: counter(
                "overspill_spilled_bytes",
                "Bytes written to the spill store",
            ),
            fallbacks: counter(
                "overspill_fallbacks",
                "Store or model failures that ran an action's `then` (or failed the activity)",
            ),
            reductions: counter("overspill_reductions", "Tool results reduced, by kind"),
            plain: meter.new_attributes(NewAttributes::default()),
            kinds: [
                kind("passthrough"),
                kind("truncated"),
                kind("spilled"),
                kind("summarized"),
            ],
        })))
    }

    /// One payload of `bytes` spilled.
    pub fn spilled(&self, bytes: u64) {
        if let Some(c) = &self.0 {
            c.spills.add(1, &c.plain);
            c.spilled_bytes.add(bytes, &c.plain);
        }
    }

    /// A store or model call failed.
    pub fn fallback(&self) {
        if let Some(c) = &self.0 {
            c.fallbacks.add(1, &c.plain);
        }
    }

    /// One result reduced as `kind`.
    pub fn reduced(&self, kind: ReductionKind) {
        if let Some(c) = &self.0 {
            let i = match kind {
                ReductionKind::Passthrough => 0,
                ReductionKind::Truncated => 1,
                ReductionKind::Spilled => 2,
                ReductionKind::Summarized => 3,
            };
            c.reductions.add(1, &c.kinds[i]);
        }
    }
}
