//! The recorder judging as it writes: every line it writes, the meta line first, is fed to a
//! live [`Monitor`], and each finding it gives is told twice — as a `tracing` warning of target
//! [`FINDING_TARGET`], and to the callback the service installed.
//!
//! A finding is found under the recorder's lock (the line and the monitor must move together)
//! and told after it is released: the callback may read the [`super::Recording`], and a layer
//! that receives the warning may log again, without waiting on a lock the recorder holds.
//!
//! The warning is told while the recorder's subscriber is still dispatching the event that
//! decided it, where `tracing`'s macros cannot reach a subscriber: the thread's default is
//! borrowed and marked entered, so an event sent through it is dropped (and a default set there
//! panics). So the warning is sent to the recorder's own subscriber directly, as an event of a
//! callsite of its own; every layer of that subscriber receives it, and the recorder ignores it.

use std::io::Write;
use std::sync::Arc;

use tracing::dispatcher::{self, Dispatch, WeakDispatch};
use tracing::field::{Field, FieldSet, Value};
use tracing::{Event, Level, Metadata};
use tracing_core::callsite::{Callsite, DefaultCallsite};
use tracing_core::{identify_callsite, Kind};

use crate::dialect::{reading, Flags};
use crate::live::{Monitor, Report, Summary};
use crate::trace::Finding;

/// The target of the warnings the recorder emits for what it finds: not [`super::TARGET`], so a
/// finding is never recorded as a line of the trace.
pub const FINDING_TARGET: &str = "turnfence::finding";

/// What a service is told of each finding.
pub(super) type OnFinding = Arc<dyn Fn(&Finding) + Send + Sync>;

/// The live judge of one recorder's lines.
#[derive(Default)]
pub(super) struct Judging {
    /// Judging was asked for.
    pub(super) on: bool,
    /// Made from the first line written, which says how the trace is read; taken at the end.
    monitor: Option<Monitor>,
    /// The monitor was made (or could not be), so no later line makes another.
    made: bool,
    pub(super) on_finding: Option<OnFinding>,
    pub(super) on_withdrawn: Option<OnFinding>,
    /// The subscriber the recorder is part of: the warnings are sent to it.
    pub(super) dispatch: Option<WeakDispatch>,
    /// Reports given but not told yet.
    pending: Vec<Report>,
}

/// Findings to tell once the recorder's lock is released.
#[must_use = "a finding is told only when `tell` is called"]
pub(super) struct Told {
    reports: Vec<Report>,
    on_finding: Option<OnFinding>,
    on_withdrawn: Option<OnFinding>,
    dispatch: Option<WeakDispatch>,
}

impl Judging {
    /// A line just written, at `now` on the recorder's clock. The first line makes the monitor,
    /// read as `check` reads the file: by what that line names.
    pub(super) fn feed(&mut self, line: &str, now: u64, report: &mut dyn Write) {
        if !self.on {
            return;
        }
        if !std::mem::replace(&mut self.made, true) {
            match reading(line, &Flags::default()).and_then(|read| Monitor::new(&read)) {
                Ok(monitor) => self.monitor = Some(monitor),
                Err(e) => {
                    let _ = writeln!(report, "turnfence recorder: not judged: {e}");
                    let _ = report.flush();
                }
            }
        }
        if let Some(monitor) = &mut self.monitor {
            self.pending.extend(monitor.feed(line, now));
        }
    }

    /// What the monitor saw so far, if it judges.
    pub(super) fn summary(&self) -> Option<Summary> {
        if !self.on {
            return None;
        }
        Some(
            self.monitor
                .as_ref()
                .map(|m| m.summary().clone())
                .unwrap_or_default(),
        )
    }

    /// The end of judging: the sessions still open are judged, and what the monitor saw
    /// returned. Later lines are written and not judged.
    pub(super) fn finish(&mut self) -> Option<Summary> {
        if !std::mem::replace(&mut self.on, false) {
            return None;
        }
        self.made = true;
        let Some(monitor) = self.monitor.take() else {
            return Some(Summary::default());
        };
        let (reports, summary) = monitor.finish();
        self.pending.extend(reports);
        Some(summary)
    }

    /// The findings given since the last call, with whom to tell.
    pub(super) fn told(&mut self) -> Told {
        Told {
            reports: std::mem::take(&mut self.pending),
            on_finding: self.on_finding.clone(),
            on_withdrawn: self.on_withdrawn.clone(),
            dispatch: self.dispatch.clone(),
        }
    }
}

impl Told {
    /// Emits a warning for each finding given or withdrawn, and calls the service's callback.
    /// Call it with no lock of the recorder held.
    pub(super) fn tell(self) {
        let subscriber = self.dispatch.as_ref().and_then(WeakDispatch::upgrade);
        for r in &self.reports {
            let (f, withdrawn, call) = match r {
                Report::Finding(f) => (f, false, &self.on_finding),
                Report::Withdrawn(f) => (f, true, &self.on_withdrawn),
                Report::NotJudged(_) | Report::InputError { .. } => continue,
            };
            match &subscriber {
                Some(subscriber) => warn(subscriber, f, withdrawn),
                None => dispatcher::get_default(|current| warn(current, f, withdrawn)),
            }
            if let Some(call) = call {
                call(f);
            }
        }
    }
}

/// The warnings' callsite: a finding's rule, where the trace breaks it, and why.
static WARNING: DefaultCallsite = DefaultCallsite::new(&WARNING_METADATA);

static WARNING_METADATA: Metadata<'static> = Metadata::new(
    "turnfence finding",
    FINDING_TARGET,
    Level::WARN,
    Some(file!()),
    Some(line!()),
    Some(module_path!()),
    FieldSet::new(
        &[
            "message",
            "rule",
            "session",
            "line",
            "at",
            "since",
            "ids",
            "withdrawn",
        ],
        identify_callsite!(&WARNING),
    ),
    Kind::EVENT,
);

/// One warning, sent to `subscriber` if it wants it.
fn warn(subscriber: &Dispatch, f: &Finding, withdrawn: bool) {
    let metadata = WARNING.metadata();
    if WARNING.interest().is_never() || !subscriber.enabled(metadata) {
        return;
    }
    let fields = metadata.fields();
    let ids = f.ids.join(", ");
    let values: [&dyn Value; 8] = [
        &f.message.as_str(),
        &f.name(),
        &f.session.as_str(),
        &f.line,
        &f.at,
        &f.since,
        &ids.as_str(),
        &withdrawn,
    ];
    let named: Vec<(Field, &dyn Value)> = fields.iter().zip(values).collect();
    let pairs: [(&Field, Option<&dyn Value>); 8] =
        std::array::from_fn(|i| (&named[i].0, Some(named[i].1)));
    subscriber.event(&Event::new(metadata, &fields.value_set(&pairs)));
}
