//! A decision a host keeps past the call that made it: the module's output
//! copied out of its memory (the next call overwrites it), checked once.
//! A host's own answers are decisions too, so a host carries out every
//! answer the same way.

use std::vec::Vec;

use crate::decision::{Decision, DecodeError};
use crate::encode::Encoder;
use crate::fields::{HostAnswer, JSON};

/// A checked decision and the bytes it was read from.
#[derive(Clone, PartialEq, Eq)]
pub struct DecisionBuf {
    status: u32,
    bytes: Vec<u8>,
}

impl DecisionBuf {
    /// Copies and checks the output of a `handle` call that returned `status`.
    pub fn decode(status: u32, output: &[u8]) -> Result<DecisionBuf, DecodeError> {
        Decision::decode(status, output)?;
        Ok(DecisionBuf { status, bytes: output.to_vec() })
    }

    /// The host's own answer (`ABI.md`, "Answers the host makes itself").
    pub fn host_answer(answer: HostAnswer) -> DecisionBuf {
        let mut bytes = std::vec![0u8; 256];
        let mut out = Encoder::new(&mut bytes);
        // 256 bytes hold the longest description, body and content type.
        let written = out
            .answer("", answer.description())
            .and_then(|()| out.add_response_field("content-type", &[JSON.as_bytes()]))
            .and_then(|()| out.body(&[answer.body().as_bytes()]))
            .map(|()| out.written());
        bytes.truncate(written.unwrap_or(0));
        DecisionBuf { status: u32::from(answer.status()), bytes }
    }

    /// The decision.
    pub fn view(&self) -> Decision<'_> {
        match Decision::decode(self.status, &self.bytes) {
            Ok(decision) => decision,
            // Checked when it was made; the bytes never change.
            Err(_) => unreachable!("a DecisionBuf holds a checked decision"),
        }
    }

    /// The HTTP status (200 for a forward).
    pub fn status(&self) -> u16 {
        self.view().status()
    }

    /// The output as the module wrote it.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl core::fmt::Debug for DecisionBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.view().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }
}
