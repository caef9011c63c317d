//! The readers of every stack's log, one folder each: the lab's events (`lab`, beside the
//! vocabulary the gate writes them in), OpenAI Realtime apps' wire and player logs
//! (`openai_realtime`), LiveKit Agents' session events (`livekit`) and Pipecat pipelines' frames
//! as the observer writes them (`pipecat`). A real stack's dialect is one trait,
//! [`StackDialect`](crate::trace::StackDialect): what one line of its log is to the machine,
//! read by the reader every stack shares ([`StackReader`](crate::trace::StackReader)); the lab's
//! implements the checker's [`Reader`](crate::trace::Reader) itself (it holds a scenario's lines
//! back). Adding a stack is a folder here, that trait, and its name in `trace::Dialect`.

pub mod lab;
pub mod livekit;
pub mod openai_realtime;
pub mod pipecat;
