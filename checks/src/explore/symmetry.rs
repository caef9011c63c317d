//! Symmetry reduction for the fence explorer (TLC's symmetry sets, stateright's
//! `Representative`): a state is known by its class under a renaming of tokens and request ids.
//!
//! **What is interchangeable.** A token or `req` is a name the model only compares (it orders
//! acks by name only past 256 of them; `turnfence_model::fence::rename`), and the alphabet
//! draws each fresh one from a pool by the number of requests sent so far, the same in every
//! state of a class. So any renaming among the names already drawn — fixing the malformed
//! `../x`, which the supervisor tells apart, and every name still to be drawn — maps the
//! explorer's runs to its runs, and a state to one with the same future. **Not**
//! interchangeable: the workers (the explorer's `w0` and `w1` start alike in the `transport`
//! bounds, yet the machine re-sends waits that run out at one instant in worker order, so `w0`'s
//! re-send is queued first; and the `queue` bounds finish task `root-a` by name), the roots
//! (`root-a` takes the owner messages) and the direct worker.
//!
//! **The canonical form.** Each worker's requests are sequential, so a req belongs to one worker,
//! and each req went out with one token (the monitor's record of requests). A labeling orders
//! every worker's valid reqs (workers in their fixed order), labels them `q0, q1, …` in that
//! order, and labels each token `t0, t1, …` where a req first carries it; `../x` keeps its name
//! and labels its token in its worker's last place. The class's fingerprint is the least, over
//! every order of each worker's reqs that sorts them by what the machine shows of them (waiting,
//! queued, acked: no name in it), ties tried every way — at most 3! = 6 orders at the CI bounds,
//! one in most states — of the state and the monitor's memory hashed as that labeling renames
//! them (never built). Any renaming of the drawn names permutes these labelings among
//! themselves, so two states share the least exactly when a renaming maps one onto the other:
//! the form is exact, not merely sound (tested against every renaming in `tests/it/symmetry.rs`).

use std::collections::BTreeMap;

use turnfence_model::fence::rename::Renaming;
use turnfence_model::fence::table::valid_id;
use turnfence_model::fence::{FenceMachine, FenceState, Flaw, Monitor, Token, Worker};
use turnfence_model::Plant;

use std::hash::Hasher;

use super::hasher;

/// The fingerprint of the state's class under renamings of its tokens and request ids.
pub fn canonical_fingerprint<P: Plant<Flaw>>(machine: &FenceMachine<P>, monitor: &Monitor) -> u64 {
    let state = machine.state();
    let token_of: BTreeMap<&str, &str> = monitor.requests().map(|(_, t, q)| (q, t)).collect();
    // Per worker: its valid reqs, ordered by what the machine shows of them, in runs of equal
    // showing (each run to be ordered every way); then its malformed ones (fixed).
    let mut runs: Vec<(usize, Vec<&str>)> = Vec::new();
    let mut fixed: Vec<Vec<&str>> = Vec::new();
    for (i, w) in state.workers.values().enumerate() {
        let (valid, malformed): (Vec<&str>, Vec<&str>) = w
            .used_reqs
            .iter()
            .map(|q| q.as_str())
            .partition(|q| valid_id(q));
        let mut shown: Vec<_> = valid.into_iter().map(|q| (shown(state, w, q), q)).collect();
        shown.sort_by(|a, b| a.0.cmp(&b.0));
        for run in shown.chunk_by(|a, b| a.0 == b.0) {
            runs.push((i, run.iter().map(|(_, q)| *q).collect()));
        }
        fixed.push(malformed);
    }
    let mut best = u64::MAX;
    loop {
        let renaming = labeling(&runs, &fixed, &token_of);
        // Hashed as renamed, never built: a state's class costs no copy of it.
        let mut h = hasher();
        state.hash_renamed(&renaming, &mut h);
        monitor.hash_renamed(&renaming, &mut h);
        best = best.min(h.finish());
        if !next_order(&mut runs) {
            return best;
        }
    }
}

/// What the machine shows of a request, its names aside: the attempt its worker waits on it at,
/// where its events stand in the queue, and the status of its ack in the mailbox. A renaming
/// keeps it, so ordering each worker's requests by it first leaves only its ties to be tried
/// every way, and the least over those orders is still the class's.
fn shown(
    state: &FenceState,
    w: &Worker,
    q: &str,
) -> (Option<u8>, Vec<usize>, Option<&'static str>) {
    let waiting = w.waiting.as_ref().filter(|x| x.req == q).map(|x| x.attempt);
    let queued = state.queue.iter().enumerate();
    let queued = queued.filter(|(_, e)| e.req == q).map(|(i, _)| i).collect();
    let acked = state.mailbox.values().find(|a| a.req == q);
    (waiting, queued, acked.map(|a| a.reply.status.name()))
}

/// The renaming that labels each worker's reqs in the given order (its runs, in turn) and tokens
/// where a req first carries them.
fn labeling(
    runs: &[(usize, Vec<&str>)],
    fixed: &[Vec<&str>],
    token_of: &BTreeMap<&str, &str>,
) -> Renaming {
    let mut reqs = BTreeMap::new();
    let mut tokens: BTreeMap<Token, Token> = BTreeMap::new();
    for (i, malformed) in fixed.iter().enumerate() {
        let valid: Vec<&str> = runs
            .iter()
            .filter(|(w, _)| *w == i)
            .flat_map(|(_, run)| run.iter().copied())
            .collect();
        for q in &valid {
            reqs.insert((*q).into(), Token::format(format_args!("q{}", reqs.len())));
        }
        for q in valid.iter().chain(malformed) {
            if let Some(t) = token_of.get(q) {
                if !tokens.contains_key(*t) {
                    let label = Token::format(format_args!("t{}", tokens.len()));
                    tokens.insert((*t).into(), label);
                }
            }
        }
    }
    Renaming::new(tokens, reqs)
}

/// Steps the orders of every run like an odometer, each run through its permutations in
/// lexicographic order; `false` once every combination was seen (the runs are sorted again).
fn next_order(runs: &mut [(usize, Vec<&str>)]) -> bool {
    for (_, run) in runs.iter_mut() {
        if next_permutation(run) {
            return true;
        }
    }
    false
}

/// The next permutation in lexicographic order; `false` (and sorted) after the last.
fn next_permutation<T: Ord>(v: &mut [T]) -> bool {
    let Some(i) = (1..v.len()).rev().find(|&i| v[i - 1] < v[i]) else {
        v.reverse();
        return false;
    };
    let j = (i..v.len()).rev().find(|&j| v[i - 1] < v[j]).unwrap_or(i);
    v.swap(i - 1, j);
    v[i..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::next_permutation;

    #[test]
    fn next_permutation_walks_every_order_once() {
        let mut v = vec![1, 2, 3];
        let mut seen = vec![v.clone()];
        while next_permutation(&mut v) {
            seen.push(v.clone());
        }
        assert_eq!(seen.len(), 6);
        assert_eq!(v, [1, 2, 3]);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 6);
    }
}
