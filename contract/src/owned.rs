//! A decision a host keeps past the call that made it: the module's output
//! copied out of its memory (the next call overwrites it), checked once.
//! A host's own answers are decisions too, so a host carries out every
//! answer the same way.

use std::string::String;

use crate::decision::{Decision, DecodeError};
use crate::encode::Encoder;
use crate::fields::{HostAnswer, JSON};

/// A checked decision and the text it was read from. Two are equal when
/// they decide the same: the label line's cache letter, which says only
/// whether the instance had verified the token before, is not compared (a
/// reused instance and a fresh one decide alike, and say so differently).
#[derive(Clone, Eq)]
pub struct DecisionBuf {
    status: u32,
    /// Checked whole by [`Decision::decode`] when it was made; never changed.
    text: String,
}

impl DecisionBuf {
    /// Copies and checks the output of a `handle` call that returned `status`.
    pub fn decode(status: u32, output: &[u8]) -> Result<DecisionBuf, DecodeError> {
        let text = Decision::checked_text(status, output)?;
        Ok(DecisionBuf { status, text: String::from(text) })
    }

    /// The host's own answer (`ABI.md`, "Answers the host makes itself").
    pub fn host_answer(answer: HostAnswer) -> DecisionBuf {
        let mut bytes = std::vec![0u8; 256];
        let mut out = Encoder::new(&mut bytes);
        // 256 bytes hold the longest description, body and content type.
        let written = out
            .answer("", answer.description())
            .and_then(|()| out.labels(&crate::Labels::of(answer.outcome())))
            .and_then(|()| out.add_response_field("content-type", &[JSON.as_bytes()]))
            .and_then(|()| out.body(&[answer.body().as_bytes()]))
            .map(|()| out.written());
        bytes.truncate(written.unwrap_or(0));
        // The encoder writes decisions the decoder accepts (contract/tests/golden.rs).
        DecisionBuf::decode(u32::from(answer.status()), &bytes)
            .unwrap_or_else(|e| unreachable!("a host answer is a decision: {e}"))
    }

    /// The decision: its structure read again, its bytes not checked again.
    pub fn view(&self) -> Decision<'_> {
        match Decision::read_checked(self.status, &self.text) {
            Ok(decision) => decision,
            // Checked when it was made; the text never changes.
            Err(_) => unreachable!("a DecisionBuf holds a checked decision"),
        }
    }

    /// The HTTP status (200 for a forward).
    pub fn status(&self) -> u16 {
        self.view().status()
    }

    /// The output as the module wrote it.
    pub fn as_bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }
}

impl PartialEq for DecisionBuf {
    fn eq(&self, other: &Self) -> bool {
        self.status == other.status && cache_blind(self.view()) == cache_blind(other.view())
    }
}

/// `decision` with its label line's cache letter read as none.
fn cache_blind(mut decision: Decision<'_>) -> Decision<'_> {
    match &mut decision {
        Decision::Forward(forward) => forward.labels.cache = crate::Cache::None,
        Decision::Answer(answer) => answer.labels.cache = crate::Cache::None,
    }
    decision
}

impl core::fmt::Debug for DecisionBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.view().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view a kept decision hands out is the one its output decodes to.
    #[test]
    fn the_view_is_the_decoded_decision() {
        let outputs: [(u32, &str); 4] = [
            (
                200,
                "http://10.0.0.5:8080\n/orders/7?x=1\n#000003000100 h\n-authorization\n+x-gateway-subject:alice\n!server\n>vary:Origin",
            ),
            (200, "https://users.test\n/\n#01ffff0000ff -"),
            (
                401,
                "invalid_token\ntoken expired\n#31ffffffff00 m\n~2\n>www-authenticate:Bearer realm=\"api\"\n>content-type:application/json\n{}",
            ),
            (500, ""),
        ];
        for (status, output) in outputs {
            let kept = DecisionBuf::decode(status, output.as_bytes()).expect("a decision");
            assert_eq!(
                kept.view(),
                Decision::decode(status, output.as_bytes()).expect("a decision"),
                "{output}"
            );
            assert_eq!(kept.as_bytes(), output.as_bytes());
        }
    }

    #[test]
    fn decisions_that_differ_only_in_the_cache_letter_are_equal() {
        let decode = |text: &str| DecisionBuf::decode(200, text.as_bytes()).expect("a forward");
        let hit = decode("http://u\n/\n#00ffff000000 h\n-host");
        assert_eq!(hit, decode("http://u\n/\n#00ffff000000 m\n-host"));
        assert_ne!(hit, decode("http://u\n/\n#00ffff000100 h\n-host"), "another route");
        assert_ne!(hit, decode("http://u\n/\n#00ffff000000 h\n-host\n-authorization"), "another plan");
    }

    #[test]
    fn host_answers_are_decisions() {
        for answer in HostAnswer::ALL {
            let buf = DecisionBuf::host_answer(answer);
            let Decision::Answer(view) = buf.view() else { panic!("{answer:?}") };
            assert_eq!(
                (view.status, view.reason, view.body),
                (answer.status(), answer.description(), answer.body())
            );
            assert_eq!(view.field("content-type"), Some(JSON));
            assert_eq!(view.labels, crate::Labels::of(answer.outcome()));
        }
    }
}
