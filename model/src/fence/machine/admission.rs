//! The table's own inputs and admission: an owner's message, a task done (its row cleared), and
//! an enqueued task admitted or blocked by its root's fence.

use super::{FenceMachine, TaskStatus};
use crate::fence::table::{OwnerMessage, Table};
use crate::fence::types::*;
use crate::fence::Flaw;
use crate::Plant;

impl<P: Plant<Flaw>> FenceMachine<P> {
    pub(super) fn owner_message(&mut self, root: &str) {
        match Table::owner_message(&mut self.state.table, root) {
            OwnerMessage::Refused => self.emit(Output::OwnerMessageRefused { root: root.into() }),
            OwnerMessage::Written { generation } => self.emit(Output::OwnerMessageWritten {
                root: root.into(),
                generation,
            }),
        }
    }

    pub(super) fn task_done(&mut self, task: &str) {
        if let Some((_, status)) = self.state.tasks.get_mut(task) {
            *status = TaskStatus::Done;
        }
        // Read first: without a row the table is not borrowed mutably (nor copied if shared).
        if self.state.table.rows.contains_key(task) && self.state.table.task_done(task) {
            self.emit(Output::RowCleared { root: task.into() });
        }
    }

    pub(super) fn enqueue(&mut self, task: &str, root: &str) {
        let blocked = self.state.table.blocks(root);
        match blocked {
            Some(status) if !flawed!(self, AdmitUnderFence) => {
                self.emit(Output::AdmissionBlocked {
                    task: task.into(),
                    root: root.into(),
                    status,
                });
            }
            _ => {
                self.state
                    .tasks
                    .insert(task.into(), (root.into(), TaskStatus::Pending));
                self.emit(Output::Admitted {
                    task: task.into(),
                    root: root.into(),
                });
            }
        }
    }
}
