//! A bump arena over a fixed region: request-scoped scratch without a heap.
//!
//! The worker has no global allocator. Each request builds a fresh `Arena`
//! over the instance's scratch region, which is the reset: nothing outlives
//! the request. Allocation splits a piece off the end of the free space with
//! `split_at_mut`, so the arena needs no `unsafe` and the borrow checker
//! proves the pieces disjoint. Running out is an error the caller answers
//! with a 500, never a panic.
//!
//! Pieces come from the back of the region because the instance lays the
//! input buffer right after it (`abi::Instance`): a request's few hundred
//! bytes of scratch then share a 4 KiB page with the request head, and a
//! fresh instance touches one page fewer.

use crate::reject::Rejection;

/// Hands out disjoint byte slices of one region, front to back.
pub struct Arena<'a> {
    free: &'a mut [u8],
    used: usize,
}

impl<'a> Arena<'a> {
    /// An empty arena over `region`.
    pub fn new(region: &'a mut [u8]) -> Self {
        Arena { free: region, used: 0 }
    }

    /// The last `len` free bytes of the region (their contents are left over
    /// from earlier requests; callers write before they read).
    pub fn alloc(&mut self, len: usize) -> Result<&'a mut [u8], Rejection> {
        let Some(start) = self.free.len().checked_sub(len) else {
            return Err(Rejection::ScratchExhausted);
        };
        let (rest, piece) = core::mem::take(&mut self.free).split_at_mut(start);
        self.free = rest;
        self.used += len;
        Ok(piece)
    }

    /// Bytes handed out so far.
    pub fn used(&self) -> usize {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_disjoint_pieces_from_the_back_and_reports_exhaustion() {
        let mut region = [0u8; 10];
        let mut arena = Arena::new(&mut region);
        let a = arena.alloc(4).expect("fits");
        let b = arena.alloc(6).expect("fits");
        a.fill(1);
        b.fill(2);
        assert_eq!(arena.used(), 10);
        assert_eq!(arena.alloc(1), Err(Rejection::ScratchExhausted));
        assert_eq!(arena.alloc(0).map(|s| s.len()), Ok(0));
        assert_eq!(region, [2, 2, 2, 2, 2, 2, 1, 1, 1, 1]);
    }

    #[test]
    fn a_new_arena_over_the_same_region_starts_again() {
        let mut region = [0u8; 4];
        {
            let mut arena = Arena::new(&mut region);
            arena.alloc(4).expect("fits").copy_from_slice(b"abcd");
        }
        let mut arena = Arena::new(&mut region);
        assert_eq!(arena.alloc(4).expect("fits after reset"), b"abcd");
    }
}
