//! The core's decision for one request, read with the contract's decoder
//! (`ABI.md`, "The decision"): a forward to carry out, or an answer to send.
//! Output that breaks the format is an error, which the filter answers with
//! a 500: it never forwards on a decision it cannot read.

pub use contract::{Answer, Decision, DecodeError, Forward, Operation};
use worker::abi::{Instance, compiled_config};

/// Runs the core on the first `len` bytes of `instance`'s input buffer
/// (context line and head, written there by the caller; a `len` beyond the
/// buffer is a head that did not fit, which the core answers 431) at Unix
/// time `now`, with the compiled-in config, and reads its decision.
pub fn decide_written(instance: &mut Instance, len: usize, now: f64) -> Result<Decision<'_>, DecodeError> {
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    let status = instance.handle(len, now, compiled_config());
    Decision::decode(status, instance.output())
}

/// Copies `input` into `instance`'s input buffer and decides it as
/// [`decide_written`] does.
pub fn decide<'a>(instance: &'a mut Instance, input: &[u8], now: f64) -> Result<Decision<'a>, DecodeError> {
    // A head that does not fit is passed by its length only: the core answers 431.
    if let Some(buffer) = instance.input_mut().get_mut(..input.len()) {
        buffer.copy_from_slice(input);
    }
    decide_written(instance, input.len(), now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use worker::abi::INPUT_CAPACITY;

    #[test]
    fn the_core_decides_through_the_instance() {
        let mut instance = Box::new(Instance::new());
        let input = b"http 127.0.0.1\nGET / HTTP/1.1\r\nHost: gw\r\n\r\n";
        let decision = decide(&mut instance, input, 1.8e9).expect("readable");
        let Decision::Answer(answer) = decision else { panic!("{decision:?}") };
        assert_eq!(answer.status, 401);
        assert!(answer.field("www-authenticate").is_some_and(|c| c.starts_with("Bearer realm=")));
        let huge = vec![b'a'; INPUT_CAPACITY + 1];
        let decision = decide(&mut instance, &huge, 1.8e9).expect("readable");
        assert!(matches!(decision, Decision::Answer(Answer { status: 431, .. })), "{decision:?}");
    }
}
