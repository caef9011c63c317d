//! A session of this dialect's log for a long synthetic log (`gate::synthetic::SyntheticTrace::
//! of_session`): two responses, one interrupted by speech (queued audio cleared, the item
//! truncated to what played) and one played out, with events the dialect skips among them, then
//! closed. The `check` throughput bench and the streaming test copy it a thousand times over.

/// The name [`SESSION`] gives its session on every line.
pub const SESSION_NAME: &str = "rt";

/// One session: a response barged in on, then one played out.
pub const SESSION: &str = concat!(
    r#"{"session":"rt","t_ms":0,"dir":"client","event":{"type":"response.create","event_id":"c1"}}"#,
    "\n",
    r#"{"session":"rt","t_ms":20,"dir":"server","event":{"type":"response.created","event_id":"e1","response":{"id":"resp_1","status":"in_progress","output_modalities":["audio"]}}}"#,
    "\n",
    r#"{"session":"rt","t_ms":21,"dir":"server","event":{"type":"rate_limits.updated","event_id":"e2","rate_limits":[]}}"#,
    "\n",
    r#"{"session":"rt","t_ms":30,"dir":"server","event":{"type":"response.output_audio.delta","event_id":"e3","response_id":"resp_1","item_id":"i1","audio_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":31,"dir":"server","event":{"type":"response.output_audio_transcript.delta","event_id":"e4","response_id":"resp_1","item_id":"i1","delta":"Hel"}}"#,
    "\n",
    r#"{"session":"rt","t_ms":40,"dir":"server","event":{"type":"response.output_audio.delta","event_id":"e5","response_id":"resp_1","item_id":"i1","audio_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":50,"dir":"server","event":{"type":"response.output_audio.delta","event_id":"e6","response_id":"resp_1","item_id":"i1","audio_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":60,"dir":"server","event":{"type":"response.output_audio.delta","event_id":"e7","response_id":"resp_1","item_id":"i1","audio_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":180,"dir":"app","event":{"type":"playback.played","response_id":"resp_1","audio_end_ms":150}}"#,
    "\n",
    r#"{"session":"rt","t_ms":180,"dir":"server","event":{"type":"input_audio_buffer.speech_started","event_id":"e8","audio_start_ms":1800,"item_id":"u1"}}"#,
    "\n",
    r#"{"session":"rt","t_ms":181,"dir":"app","event":{"type":"playback.cleared","response_id":"resp_1","cleared_ms":250}}"#,
    "\n",
    r#"{"session":"rt","t_ms":182,"dir":"client","event":{"type":"conversation.item.truncate","event_id":"c2","item_id":"i1","content_index":0,"audio_end_ms":150}}"#,
    "\n",
    r#"{"session":"rt","t_ms":195,"dir":"server","event":{"type":"response.done","event_id":"e9","response":{"id":"resp_1","status":"cancelled","status_details":{"type":"cancelled","reason":"turn_detected"}}}}"#,
    "\n",
    r#"{"session":"rt","t_ms":200,"dir":"server","event":{"type":"conversation.item.truncated","event_id":"e10","item_id":"i1","content_index":0,"audio_end_ms":150}}"#,
    "\n",
    r#"{"session":"rt","t_ms":900,"dir":"client","event":{"type":"response.create","event_id":"c3"}}"#,
    "\n",
    r#"{"session":"rt","t_ms":920,"dir":"server","event":{"type":"response.created","event_id":"e11","response":{"id":"resp_2","status":"in_progress","output_modalities":["audio"]}}}"#,
    "\n",
    r#"{"session":"rt","t_ms":930,"dir":"server","event":{"type":"response.output_audio.delta","event_id":"e12","response_id":"resp_2","item_id":"i2","audio_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":940,"dir":"server","event":{"type":"response.output_audio.delta","event_id":"e13","response_id":"resp_2","item_id":"i2","audio_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":950,"dir":"server","event":{"type":"response.output_audio.delta","event_id":"e14","response_id":"resp_2","item_id":"i2","audio_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":955,"dir":"server","event":{"type":"response.done","event_id":"e15","response":{"id":"resp_2","status":"completed","status_details":null}}}"#,
    "\n",
    r#"{"session":"rt","t_ms":1030,"dir":"app","event":{"type":"playback.played","response_id":"resp_2","audio_end_ms":100}}"#,
    "\n",
    r#"{"session":"rt","t_ms":1130,"dir":"app","event":{"type":"playback.played","response_id":"resp_2","audio_end_ms":200}}"#,
    "\n",
    r#"{"session":"rt","t_ms":1230,"dir":"app","event":{"type":"playback.played","response_id":"resp_2","audio_end_ms":300}}"#,
    "\n",
    r#"{"session":"rt","t_ms":1231,"dir":"app","event":{"type":"session.closed"}}"#,
    "\n",
);
