//! A restart from a snapshot: the table and the event queue are gone, and the pending tasks of
//! fenced roots are cancelled; a malformed snapshot restores nothing.

use super::{FenceMachine, TaskStatus};
use crate::fence::table::Table;
use crate::fence::types::*;
use crate::fence::Flaw;
use crate::Plant;

impl<P: Plant<Flaw>> FenceMachine<P> {
    /// A restart from a snapshot: rows are not reloaded, they only cancel the pending
    /// descendants of fenced roots; a malformed snapshot restores nothing.
    pub(super) fn restore(&mut self, fences: &FenceSnapshot, pending: &[SnapshotTask]) {
        // What is already empty is left as it is (not borrowed mutably, nor copied if shared).
        if !self.state.table.rows.is_empty() {
            *self.state.table = Table::default();
        }
        if !self.state.queue.is_empty() {
            self.state.queue.clear();
        }
        let fenced: Option<Vec<&str>> = match fences {
            FenceSnapshot::Malformed(_) => None,
            FenceSnapshot::Rows(rows) if rows.iter().any(|r| r.root.is_empty()) => None,
            FenceSnapshot::Rows(rows) => Some(
                rows.iter()
                    .filter(|r| matches!(r.status, Status::Active | Status::Sealed))
                    .map(|r| r.root.as_str())
                    .collect(),
            ),
        };
        let ignore = flawed!(self, RestoreIgnoresFences);
        let (mut restored, mut cancelled) = (Vec::new(), Vec::new());
        for t in pending {
            let keep = match &fenced {
                None => ignore,
                Some(roots) => ignore || !roots.contains(&t.root.as_str()),
            };
            let status = if keep {
                restored.push(t.task.clone());
                TaskStatus::Pending
            } else {
                cancelled.push(t.task.clone());
                TaskStatus::Cancelled
            };
            self.state
                .tasks
                .insert(t.task.clone(), (t.root.clone(), status));
        }
        self.emit(Output::Restored {
            restored,
            cancelled,
            fail_closed: fenced.is_none(),
        });
    }
}
