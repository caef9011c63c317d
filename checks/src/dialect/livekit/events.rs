//! The keys of a LiveKit event the dialect reads, as serde takes them.

use serde::Deserialize;

/// The keys of a LiveKit event this dialect reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Ev {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) created_at: Option<f64>,
    pub(super) new_state: Option<String>,
    pub(super) old_state: Option<String>,
    pub(super) is_final: Option<bool>,
    pub(super) transcript: Option<String>,
    pub(super) resumed: Option<bool>,
    pub(super) item: Option<Item>,
    pub(super) update: Option<Update>,
    pub(super) function_calls: Vec<Call>,
    /// Before 1.6.5 an output may be `null` (a call without one).
    pub(super) function_call_outputs: Vec<Option<CallOutput>>,
    /// `speech_created`: the speech handle's `allow_interruptions`, where the app states it.
    pub(super) allow_interruptions: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Item {
    pub(super) id: Option<String>,
    pub(super) role: Option<String>,
    pub(super) interrupted: Option<bool>,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Update {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) call_id: Option<String>,
    pub(super) status: Option<String>,
    pub(super) function_call: Option<Call>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Call {
    /// The call's item id: `{generation id}/fnc_{n}` (`perform_llm_inference`), naming the
    /// generation that made it.
    pub(super) id: Option<String>,
    pub(super) call_id: Option<String>,
    pub(super) name: Option<String>,
}

impl Call {
    /// The id of the generation that made the call.
    pub(super) fn generation(&self) -> Option<&str> {
        Some(self.id.as_deref()?.split_once("/fnc_")?.0)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct CallOutput {
    pub(super) call_id: Option<String>,
    pub(super) is_error: bool,
}
