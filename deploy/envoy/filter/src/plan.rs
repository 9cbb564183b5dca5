//! A forward's plan carried out on Envoy's header maps, the same steps for
//! both fronts (the proxy-wasm filter and the native module): `:path`, the
//! drops, then the sets (`ABI.md` applies them after the drops), each
//! bucket's key for its limit's `local_ratelimit`, and the origin's header
//! the route table matches. What the forward changes in the upstream's
//! response is kept for the response ([`ResponseEdits`]).

use crate::UPSTREAM_HEADER;
use crate::decision::{Forward, Operation};

/// A header map the plan is carried out on: the request's, or the
/// upstream response's. An error is the host's refusal of the call.
pub trait Fields {
    /// Why the host refused a change.
    type Error;
    /// Sets field `name` to `value`, replacing every field of that name.
    fn set(&mut self, name: &str, value: &str) -> Result<(), Self::Error>;
    /// Removes every field named `name`.
    fn remove(&mut self, name: &str) -> Result<(), Self::Error>;
    /// Adds a field `name: value` beside the fields of that name.
    fn add(&mut self, name: &str, value: &str) -> Result<(), Self::Error>;
}

/// Why a plan could not be carried out.
#[derive(Debug, PartialEq, Eq)]
pub enum PlanError<E> {
    /// The host refused a change.
    Host(E),
    /// The forward changes the upstream's response, and this build keeps
    /// nothing for the response (its config has neither CORS nor rate
    /// limits, so the core never asks): refused, not ignored.
    ResponseEdits,
}

/// Why a request could not be decided or carried out, in either front
/// (each answers it with the 500 every host answers a module failure
/// with); `H` is how its host says it refused a call.
#[derive(Debug, thiserror::Error)]
pub enum GateError<H: std::fmt::Display> {
    /// The host refused a call.
    #[error("host call failed: {0}")]
    Host(H),
    /// The header map cannot be written as a request head.
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// The core's output cannot be carried out.
    #[error("the decision cannot be read: {0}")]
    Decision(#[from] crate::decision::DecodeError),
    /// The instance was in use: a re-entrant call, which Envoy never makes.
    #[error("the core's instance is busy")]
    Busy,
    /// The forward changes the upstream's response, which this build has no
    /// response callback for: its config has neither CORS nor rate limits,
    /// the policies that change responses, so the core never asks. Refused,
    /// not ignored.
    #[error("the decision changes the response, which this build of the filter cannot")]
    ResponseEdits,
}

impl<H: std::fmt::Display> From<PlanError<H>> for GateError<H> {
    fn from(error: PlanError<H>) -> Self {
        match error {
            PlanError::Host(refused) => GateError::Host(refused),
            PlanError::ResponseEdits => GateError::ResponseEdits,
        }
    }
}

/// What a forward changes in the upstream's response, kept from the
/// request's decision until the response comes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResponseEdits {
    /// Fields removed from the response.
    pub drops: Vec<String>,
    /// Fields added to the response, after the drops.
    pub adds: Vec<(String, String)>,
}

impl ResponseEdits {
    /// Whether the forward changes nothing in the response.
    pub fn is_empty(&self) -> bool {
        self.drops.is_empty() && self.adds.is_empty()
    }

    /// Carries the edits out on the response's `fields`: the drops, then
    /// the additions.
    pub fn apply<F: Fields>(&self, fields: &mut F) -> Result<(), F::Error> {
        self.drops.iter().try_for_each(|name| fields.remove(name))?;
        self.adds.iter().try_for_each(|(name, value)| fields.add(name, value))
    }
}

/// How many of a plan's sets [`apply_forward`] keeps from its one pass over
/// the plan's lines: more than a forward writes without claim headers.
const KEPT_SETS: usize = 16;

/// Carries `forward` out on the request's `fields` (`path` is its `:path`
/// now: the same bytes need no change) and returns what it changes in the
/// response. With `keeps_responses` false (a build without a response
/// callback), a forward that changes the response is refused. With
/// `limits`, each bucket's key goes into its limit's field.
pub fn apply_forward<F: Fields>(
    fields: &mut F,
    forward: &Forward<'_>,
    path: Option<&[u8]>,
    keeps_responses: bool,
    limits: bool,
) -> Result<ResponseEdits, PlanError<F::Error>> {
    if path != Some(forward.path.as_bytes()) {
        fields.set(":path", forward.path).map_err(PlanError::Host)?;
    }
    let mut edits = ResponseEdits::default();
    // One pass over the plan's lines: the drops now, the response's changes
    // kept for the response, and the sets kept here to follow every drop
    // (a plan with more sets than this holds reads its lines again for the rest).
    let mut sets = [("", ""); KEPT_SETS];
    let mut kept = 0;
    for operation in forward.operations() {
        match operation {
            Operation::DropRequestField(name) => fields.remove(name).map_err(PlanError::Host)?,
            Operation::SetRequestField(name, value) => {
                if let Some(slot) = sets.get_mut(kept) {
                    *slot = (name, value);
                }
                kept += 1;
            }
            Operation::DropResponseField(_) | Operation::AddResponseField(..) if !keeps_responses => {
                return Err(PlanError::ResponseEdits);
            }
            Operation::DropResponseField(name) => edits.drops.push(name.to_owned()),
            Operation::AddResponseField(name, value) => edits.adds.push((name.to_owned(), value.to_owned())),
        }
    }
    for &(name, value) in &sets[..kept.min(KEPT_SETS)] {
        fields.set(name, value).map_err(PlanError::Host)?;
    }
    if kept > KEPT_SETS {
        for (name, value) in forward.request_sets().skip(KEPT_SETS) {
            fields.set(name, value).map_err(PlanError::Host)?;
        }
    }
    if limits {
        for bucket in forward.buckets() {
            fields.set(&crate::limits::limit_header(bucket.limit), bucket.key).map_err(PlanError::Host)?;
        }
    }
    fields.set(UPSTREAM_HEADER, forward.origin).map_err(PlanError::Host)?;
    Ok(edits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Decision;

    /// A header map that records the calls made to it.
    #[derive(Default)]
    struct Recorded(Vec<String>);

    impl Fields for Recorded {
        type Error = ();
        fn set(&mut self, name: &str, value: &str) -> Result<(), ()> {
            self.0.push(format!("set {name}: {value}"));
            Ok(())
        }
        fn remove(&mut self, name: &str) -> Result<(), ()> {
            self.0.push(format!("remove {name}"));
            Ok(())
        }
        fn add(&mut self, name: &str, value: &str) -> Result<(), ()> {
            self.0.push(format!("add {name}: {value}"));
            Ok(())
        }
    }

    #[test]
    fn the_plan_drops_then_sets_then_names_its_origin() {
        let text = "http://127.0.0.1:9201\n/orders/7\n#00ffff000100 -\n-authorization\n\
                    +x-gateway-subject:alice\n!vary\n>vary:Origin";
        let decoded = Decision::decode(200, text.as_bytes());
        let Ok(Decision::Forward(forward)) = decoded else { panic!("a forward: {decoded:?}") };
        let mut fields = Recorded::default();
        let edits = apply_forward(&mut fields, &forward, Some(b"/orders/7"), true, false).expect("applied");
        assert_eq!(
            fields.0,
            [
                "remove authorization",
                "set x-gateway-subject: alice",
                &format!("set {UPSTREAM_HEADER}: http://127.0.0.1:9201")
            ]
        );
        assert_eq!(edits.drops, ["vary"]);
        assert_eq!(edits.adds, [("vary".to_owned(), "Origin".to_owned())]);
        let mut fields = Recorded::default();
        apply_forward(&mut fields, &forward, Some(b"/other"), true, false).expect("applied");
        assert_eq!(fields.0[0], "set :path: /orders/7", "a changed path is set first");
        let refused = apply_forward(&mut Recorded::default(), &forward, None, false, false);
        assert_eq!(refused, Err(PlanError::ResponseEdits), "no response callback: refused");
    }

    /// Every set follows every drop, whatever the order of the lines and
    /// however many sets there are (more than the pass keeps).
    #[test]
    fn sets_follow_every_drop_in_the_plans_order() {
        for sets in [1, KEPT_SETS, KEPT_SETS + 1, 2 * KEPT_SETS + 3] {
            let mut text = String::from("http://127.0.0.1:9201\n/\n#00ffff000100 -\n-a");
            let mut expected = vec!["remove a".to_owned(), "remove b".to_owned()];
            for i in 0..sets {
                text.push_str(&format!("\n+x-{i}:{i}"));
                if i == 0 {
                    // A drop after a set: still carried out before it.
                    text.push_str("\n-b");
                }
            }
            expected.extend((0..sets).map(|i| format!("set x-{i}: {i}")));
            expected.push(format!("set {UPSTREAM_HEADER}: http://127.0.0.1:9201"));
            let decoded = Decision::decode(200, text.as_bytes());
            let Ok(Decision::Forward(forward)) = decoded else { panic!("a forward: {decoded:?}") };
            let mut fields = Recorded::default();
            apply_forward(&mut fields, &forward, Some(b"/"), false, false).expect("applied");
            assert_eq!(fields.0, expected, "{sets} sets");
        }
    }

    #[test]
    fn response_edits_drop_then_add() {
        let edits = ResponseEdits {
            drops: vec!["vary".into()],
            adds: vec![
                ("vary".into(), "Origin".into()),
                ("access-control-allow-origin".into(), "https://a".into()),
            ],
        };
        let mut fields = Recorded::default();
        edits.apply(&mut fields).expect("applied");
        assert_eq!(
            fields.0,
            ["remove vary", "add vary: Origin", "add access-control-allow-origin: https://a"]
        );
    }
}
