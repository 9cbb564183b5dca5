//! The answers the filter sends from Envoy itself (a local reply): the
//! module's, with exactly its status, fields and body, and the ones a host
//! makes itself. The request goes no further; an error is Envoy's status
//! code for the host call.

use contract::fields::HostAnswer;

use crate::decision::Answer;
use crate::raw::{self, Action};

/// Sends the module's answer, with exactly its fields and body.
pub(crate) fn answer_with(answer: &Answer<'_>) -> Result<Action, u32> {
    let fields: Vec<(&str, &str)> = answer.fields().collect();
    raw::send_local_response(u32::from(answer.status), &fields, answer.body.as_bytes())?;
    Ok(Action::Pause)
}

/// Sends one of the answers a host makes itself.
pub(crate) fn host_answer(answer: HostAnswer) -> Result<Action, u32> {
    let fields = [("content-type", contract::fields::JSON)];
    raw::send_local_response(u32::from(answer.status()), &fields, answer.body().as_bytes())?;
    Ok(Action::Pause)
}
