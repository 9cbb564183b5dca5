//! Deciding a request in `serve`: the module's decision in the configured
//! isolation mode, with a forward's buckets counted in process while the
//! instance is at hand, or in Redis after it (`crate::traffic`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use contract::Decision;
use contract::owned::DecisionBuf;
use runtime::{GuestError, Input, Isolation, Outcome, Refusal, Reusable, unix_seconds};

use super::{Gateway, REUSABLE};
use crate::traffic::Counted;

/// A request decided, and its buckets counted.
#[derive(Debug)]
pub struct Decided {
    /// The decision (the module's 429 for a spent bucket), or why there is none.
    pub outcome: Outcome,
    /// What counting came to.
    pub counted: Counted,
    /// The time spent waiting for the store (Redis), which is not the
    /// module's: left out of the decision's duration.
    pub waited: Duration,
}

impl Gateway {
    /// Decides `input` now, in the configured isolation mode.
    pub fn decide(&self, input: Input<'_>) -> Outcome {
        self.decide_counted(input).0
    }

    /// Decides `input` now and counts a forward's buckets when they are
    /// counted in process (`crate::traffic`): the outcome is the module's
    /// 429 when a bucket refused. Buckets counted in Redis are left to
    /// [`Gateway::decide_and_count`].
    pub fn decide_counted(&self, input: Input<'_>) -> (Outcome, Counted) {
        self.decide_counted_at(input, unix_seconds((self.clock)()))
    }

    fn decide_counted_at(&self, input: Input<'_>, now: f64) -> (Outcome, Counted) {
        let mut counted = Counted::Unlimited;
        let count = |decision: &DecisionBuf| {
            let (Some(counting), Decision::Forward(forward)) = (&self.counting, decision.view()) else {
                return None;
            };
            counted = counting.count_here(&forward, (now * 1e6) as u64)?;
            match counted {
                Counted::Refused(refusal) => Some(refusal),
                _ => None,
            }
        };
        (self.decide_with(input, now, count), counted)
    }

    /// Decides `input` and counts a forward's buckets wherever they are
    /// counted. In Redis the instance is not held while the reply is
    /// awaited (the thread serves its other connections meanwhile): a
    /// refused request is decided again, and that instance writes the 429.
    pub async fn decide_and_count(&self, input: Input<'_>) -> Decided {
        let now = unix_seconds((self.clock)());
        let (outcome, counted) = self.decide_counted_at(input, now);
        let waited = Duration::ZERO;
        let Some(counting) = self.counting.as_ref().filter(|c| !c.in_process()) else {
            return Decided { outcome, counted, waited };
        };
        let asked = Instant::now();
        let counted = match outcome.as_ref().map(DecisionBuf::view) {
            Ok(Decision::Forward(forward)) => counting.count_shared(&forward, (now * 1e6) as u64).await,
            _ => return Decided { outcome, counted, waited },
        };
        let waited = asked.elapsed();
        if let Counted::Refused(refusal) = counted {
            let forward = |d: &DecisionBuf| matches!(d.view(), Decision::Forward(_)).then_some(refusal);
            let outcome = self.decide_with(input, unix_seconds((self.clock)()), forward);
            return Decided { outcome, counted, waited };
        }
        Decided { outcome, counted, waited }
    }

    /// Decides `input` at `now` in the configured isolation mode, `count`
    /// asked for a refusal while the instance is at hand.
    fn decide_with(
        &self,
        input: Input<'_>,
        now: f64,
        count: impl FnOnce(&DecisionBuf) -> Option<Refusal>,
    ) -> Outcome {
        let (outcome, made) = match self.isolation {
            Isolation::Fresh => (
                self.runtime.decide_counted(self.isolation, &mut Reusable::default(), input, now, count),
                true,
            ),
            Isolation::Reuse => REUSABLE.with(|cell| {
                let mut cell = cell.borrow_mut();
                let id = Arc::as_ptr(&self.runtime) as usize;
                if cell.0 != id {
                    *cell = (id, Reusable::default());
                }
                let made = !cell.1.is_live();
                (self.runtime.decide_counted(self.isolation, &mut cell.1, input, now, count), made)
            }),
        };
        if let Some((_, metrics)) = &self.metrics {
            if made {
                metrics.instance_made();
            }
            if matches!(outcome, Err(GuestError::Deadline)) {
                metrics.deadline_hit();
            }
        }
        outcome
    }
}
