//! Rate limits (`worker/ABI.md`, "Rate limits (`limited`)"): a forward
//! names the buckets it falls in; the host counts the request in each and,
//! when one is spent, asks the same instance, right after its `handle`
//! call, for the 429 it sends instead (`limited`). So the instance is kept
//! while the host counts: [`Runtime::decide_counted`] decides, hands the
//! decision to the host's counting, and calls `limited` when it refuses.
//!
//! The module decides what is limited and by which key; the host only
//! keeps the counts (`host-sim`'s `traffic` module), so a key is never
//! built by a host.

use contract::owned::DecisionBuf;

use crate::error::{GuestError, classify, one_line};
use crate::input::Input;
use crate::instance::{Isolation, Outcome, Reusable, Runtime, Slot};

/// A bucket that refused a forward: what the module's `limited` export is
/// called with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The bucket's position among the forward's `=` lines, from 0.
    pub bucket: u32,
    /// Seconds until one request passes again (at least 1).
    pub retry_after_secs: u32,
    /// Seconds until the bucket is full again.
    pub reset_secs: u32,
}

impl Runtime {
    /// True when the module exports `limited` (a module with limits).
    pub fn has_limited(&self) -> bool {
        self.exports.limited.is_some()
    }

    /// Decides `input` in the given isolation mode, then calls `count` with
    /// the decision while the instance is still at hand: when `count`
    /// returns a [`Refusal`] the outcome is the module's `limited` answer
    /// (the 429) instead of the decision. A module without `limited`, or
    /// whose `limited` fails, gets the client a 500 as any module failure.
    /// `count` runs for every decision (it looks for a forward's buckets);
    /// it is not called when the module gave no decision.
    pub fn decide_counted<'a>(
        &self,
        isolation: Isolation,
        reusable: &mut Reusable,
        input: impl Into<Input<'a>>,
        now: f64,
        count: impl FnOnce(&DecisionBuf) -> Option<Refusal>,
    ) -> Outcome {
        let input = input.into();
        match isolation {
            Isolation::Fresh => {
                let mut slot = self.fresh_slot()?;
                self.give_keys(&mut slot)?;
                let decision = slot.decide(self.layout, &input, now)?;
                self.counted(&mut slot, decision, count)
            }
            Isolation::Reuse => {
                let slot = match &mut reusable.slot {
                    Some(slot) => slot,
                    empty => empty.insert(self.fresh_slot()?),
                };
                if let Some(ticks) = self.deadline_ticks {
                    slot.store.set_epoch_deadline(ticks);
                }
                self.give_keys(slot)?;
                let outcome = match slot.decide(self.layout, &input, now) {
                    Ok(decision) => self.counted(slot, decision, count),
                    Err(e) => Err(e),
                };
                if let Err(e) = &outcome
                    && (e.poisons_instance()
                        || matches!(e, GuestError::BadOutput(_) | GuestError::Undecodable(_)))
                {
                    reusable.slot = None;
                }
                outcome
            }
        }
    }

    /// `decision`, or the module's answer for the bucket `count` found spent.
    fn counted(
        &self,
        slot: &mut Slot,
        decision: DecisionBuf,
        count: impl FnOnce(&DecisionBuf) -> Option<Refusal>,
    ) -> Outcome {
        let Some(refusal) = count(&decision) else { return Ok(decision) };
        let export = self.exports.limited.as_ref().ok_or(GuestError::BadOutput("no limited export"))?;
        if let Some(ticks) = self.deadline_ticks {
            slot.store.set_epoch_deadline(ticks);
        }
        slot.limited(export, refusal)
    }
}

impl Slot {
    /// Calls `limited(bucket, retry_after, reset)` and reads its answer.
    fn limited(&mut self, export: &wasmtime::ModuleExport, refusal: Refusal) -> Outcome {
        let func = self
            .instance
            .get_module_export(&mut self.store, export)
            .and_then(|e| e.into_func())
            .ok_or(GuestError::BadOutput("export vanished"))?;
        let typed = func
            .typed::<(i32, i32, i32), i32>(&self.store)
            .map_err(|e| GuestError::Instantiate(one_line(&e)))?;
        let arg = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
        let args = (arg(refusal.bucket), arg(refusal.retry_after_secs), arg(refusal.reset_secs));
        self.store.data_mut().cpu.start_call();
        let status = typed.call(&mut self.store, args).map_err(|e| classify(&e))?;
        let status = u32::try_from(status).map_err(|_| GuestError::BadOutput("negative status"))?;
        Ok(DecisionBuf::decode(status, self.output()?)?)
    }
}
