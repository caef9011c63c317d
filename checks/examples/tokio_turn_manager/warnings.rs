//! The manager's alerts: a `tracing` layer that prints each finding the recorder's live judge
//! gives (its warning events, of target `turnfence::finding`) as one line, as it is given.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use turnfence_checks::recorder::FINDING_TARGET;

/// Prints the recorder's warnings to a writer: `warning: RULE at line N (SESSION, AT ms): …`.
pub struct Warnings {
    out: Mutex<Box<dyn Write + Send>>,
}

impl Warnings {
    pub fn to(out: impl Write + Send + 'static) -> Warnings {
        Warnings {
            out: Mutex::new(Box::new(out)),
        }
    }
}

impl<S: Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        if metadata.target() != FINDING_TARGET || *metadata.level() != Level::WARN {
            return;
        }
        let mut said = Said::default();
        event.record(&mut said);
        let field = |name| said.0.get(name).map_or("?", String::as_str);
        let withdrawn = if field("withdrawn") == "true" {
            "withdrawn: "
        } else {
            ""
        };
        let line = format!(
            "warning: {withdrawn}{} at line {} ({}, {} ms): {}",
            field("rule"),
            field("line"),
            field("session"),
            field("at"),
            field("message")
        );
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // An alert that cannot be printed is lost; the manager goes on.
        let _ = writeln!(out, "{line}");
    }
}

/// A warning's fields as text, by name.
#[derive(Default)]
struct Said(BTreeMap<&'static str, String>);

impl Visit for Said {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
}
