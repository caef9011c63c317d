//! Pipecat's `STTMuteFilter` where the log does not say when it mutes: after 0.0.84 the filter
//! keeps its state to itself (`_handle_mute_state` pushes no `STTMuteFrame`), so the dialect
//! follows the frames the filter reacts to and decides as its `_should_mute` does.

/// A strategy of `STTMuteConfig(strategies)`, in Pipecat's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `ALWAYS`: muted while the bot speaks.
    Always,
    /// `FUNCTION_CALL`: muted while a function call runs.
    FunctionCall,
    /// `FIRST_SPEECH`: muted during the bot's first speech.
    FirstSpeech,
    /// `MUTE_UNTIL_FIRST_BOT_COMPLETE`: muted until the bot's first speech ends.
    UntilFirstBotComplete,
    /// `CUSTOM` (the application's callback) or a name the dialect does not know: the log cannot
    /// say when the filter mutes.
    Unknown,
}

impl Strategy {
    /// The strategy named `name` (`STTMuteStrategy`'s member name or value).
    pub fn named(name: &str) -> Strategy {
        match name.to_ascii_uppercase().as_str() {
            "ALWAYS" => Strategy::Always,
            "FUNCTION_CALL" => Strategy::FunctionCall,
            "FIRST_SPEECH" => Strategy::FirstSpeech,
            "MUTE_UNTIL_FIRST_BOT_COMPLETE" => Strategy::UntilFirstBotComplete,
            _ => Strategy::Unknown,
        }
    }
}

/// A frame the filter updates its state on (`STTMuteFilter.process_frame`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Start,
    CallInProgress,
    CallResult,
    BotStarted,
    BotStopped,
}

/// The filter's state as its frames show it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MuteFilter {
    strategies: Vec<Strategy>,
    call_in_progress: bool,
    bot_speaking: bool,
    first_speech_handled: bool,
    muted: bool,
}

impl MuteFilter {
    pub fn new(strategies: Vec<Strategy>) -> MuteFilter {
        MuteFilter {
            strategies,
            ..MuteFilter::default()
        }
    }

    /// Whether the filter drops the user's frames (an interruption among them) now.
    pub fn is_muted(&self) -> bool {
        self.muted
    }

    /// Whether a strategy leaves the mute state to the application (or is unknown).
    pub fn is_guessed(&self) -> bool {
        self.strategies.contains(&Strategy::Unknown)
    }

    /// The filter saw `frame`: it updates its state, then decides (a frame it drops or passes
    /// was judged by the state before).
    pub fn saw(&mut self, frame: Seen) {
        match frame {
            Seen::Start => {}
            Seen::CallInProgress => self.call_in_progress = true,
            Seen::CallResult => self.call_in_progress = false,
            Seen::BotStarted => self.bot_speaking = true,
            Seen::BotStopped => {
                self.bot_speaking = false;
                self.first_speech_handled = true;
            }
        }
        self.muted = self.should_mute();
    }

    /// `STTMuteFilter._should_mute`: the first strategy that mutes decides (`FIRST_SPEECH`
    /// marks the first speech handled as it mutes).
    fn should_mute(&mut self) -> bool {
        for s in &self.strategies {
            match s {
                Strategy::FunctionCall if self.call_in_progress => return true,
                Strategy::Always if self.bot_speaking => return true,
                Strategy::FirstSpeech if self.bot_speaking && !self.first_speech_handled => {
                    self.first_speech_handled = true;
                    return true;
                }
                Strategy::UntilFirstBotComplete if !self.first_speech_handled => return true,
                _ => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_mutes_while_the_bot_speaks() {
        let mut f = MuteFilter::new(vec![Strategy::Always]);
        f.saw(Seen::Start);
        assert!(!f.is_muted());
        f.saw(Seen::BotStarted);
        assert!(f.is_muted());
        f.saw(Seen::BotStopped);
        assert!(!f.is_muted());
    }

    #[test]
    fn until_first_bot_complete_mutes_from_the_start() {
        let mut f = MuteFilter::new(vec![Strategy::UntilFirstBotComplete]);
        f.saw(Seen::Start);
        assert!(f.is_muted());
        f.saw(Seen::BotStarted);
        f.saw(Seen::BotStopped);
        assert!(!f.is_muted());
    }

    /// `FIRST_SPEECH` mutes the bot's first speech alone: not before it starts, not after.
    #[test]
    fn first_speech_mutes_the_first_bot_speech_only() {
        let mut f = MuteFilter::new(vec![Strategy::FirstSpeech]);
        f.saw(Seen::Start);
        assert!(!f.is_muted());
        f.saw(Seen::BotStarted);
        assert!(f.is_muted());
        f.saw(Seen::BotStopped);
        assert!(!f.is_muted());
        f.saw(Seen::BotStarted);
        assert!(!f.is_muted());
    }

    #[test]
    fn function_call_mutes_while_a_call_runs() {
        let mut f = MuteFilter::new(vec![Strategy::FunctionCall]);
        f.saw(Seen::CallInProgress);
        assert!(f.is_muted());
        f.saw(Seen::CallResult);
        assert!(!f.is_muted());
    }

    #[test]
    fn custom_is_not_guessed() {
        let f = MuteFilter::new(vec![Strategy::named("CUSTOM")]);
        assert!(f.is_guessed());
        assert!(!f.is_muted());
    }
}
