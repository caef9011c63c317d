//! The table's own inputs and admission: an owner's message, a task done (its row cleared), and
//! an enqueued task admitted or blocked by its root's fence.

use super::{FenceMachine, TaskStatus};
use crate::fence::table::OwnerMessage;
use crate::fence::types::*;
use crate::fence::Flaw;
use crate::Plant;

impl<P: Plant<Flaw>> FenceMachine<P> {
    pub(super) fn owner_message(&mut self, root: &str) {
        match self.state.table.owner_message(root) {
            OwnerMessage::Refused => self.emit(Output::OwnerMessageRefused {
                root: root.to_owned(),
            }),
            OwnerMessage::Written { generation } => self.emit(Output::OwnerMessageWritten {
                root: root.to_owned(),
                generation,
            }),
        }
    }

    pub(super) fn task_done(&mut self, task: &str) {
        if let Some((_, status)) = self.state.tasks.get_mut(task) {
            *status = TaskStatus::Done;
        }
        if self.state.table.task_done(task) {
            self.emit(Output::RowCleared {
                root: task.to_owned(),
            });
        }
    }

    pub(super) fn enqueue(&mut self, task: &str, root: &str) {
        let blocked = self.state.table.blocks(root);
        match blocked {
            Some(status) if !flawed!(self, AdmitUnderFence) => {
                self.emit(Output::AdmissionBlocked {
                    task: task.to_owned(),
                    root: root.to_owned(),
                    status,
                });
            }
            _ => {
                self.state
                    .tasks
                    .insert(task.to_owned(), (root.to_owned(), TaskStatus::Pending));
                self.emit(Output::Admitted {
                    task: task.to_owned(),
                    root: root.to_owned(),
                });
            }
        }
    }
}
