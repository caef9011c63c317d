//! [`Hashed`]: a part of a state that keeps its own hash and is shared between the states that
//! have it unchanged, so a state whose step changed a few of its parts is fingerprinted by hashing
//! those few again, and copied by copying those few.
//!
//! An explorer fingerprints and copies every state it reaches, and most steps touch a part or two
//! of a state (a worker and the queue; one turn and the store) and leave the others as they were.
//! A part wrapped in `Hashed` is hashed as one `u64`: its value's hash, kept from the last
//! [`refresh`](Hashed::refresh) until the part is borrowed mutably (any `&mut`, changed or not,
//! forgets it). Without a kept hash the value is hashed on the spot, to the same `u64`: whether a
//! hash was kept never changes a fingerprint, only what it costs. Its value is shared by its
//! copies (an `Arc`) and copied on a mutable borrow while shared (copy on write): a copy of a
//! state copies none of its parts' values, and a step copies the ones it touches. A part of a
//! scratch copy keeps the value a [`restore_from`](Hashed::restore_from) replaced, if it was its
//! own, and the next mutable borrow copies into it in place ([`CopyInPlace`]), so taking input
//! after input from a scratch copy allocates only where a state kept since shares the value the
//! scratch had. Nothing here is mutable behind a `&`: a
//! kept hash and a spare value are set through `&mut self` only, and a shared value is never
//! changed.

// `Arc` is the one `std::sync` type in the model (ARCHITECTURE, "Architecture invariants"): a
// part's value shared by the states that have it unchanged. A shared value is never changed, and
// a reference count decides only which buffer a copy is made in, never a value.
#![allow(clippy::disallowed_types)]

use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Serialize, Serializer};

/// A value, shared by its copies, and, once [refreshed](Hashed::refresh) and until borrowed
/// mutably, its hash. Compared, printed and serialized as its value; hashed as its value's hash
/// (a `u64`).
pub struct Hashed<T> {
    value: Arc<T>,
    hash: Option<u64>,
    /// A value this part had to itself until a `restore_from` replaced it: the next mutable
    /// borrow of a shared value copies into it instead of allocating.
    spare: Option<Arc<T>>,
}

impl<T: Default> Default for Hashed<T> {
    fn default() -> Hashed<T> {
        Hashed::new(T::default())
    }
}

impl<T> Hashed<T> {
    pub fn new(value: T) -> Hashed<T> {
        Hashed {
            value: Arc::new(value),
            hash: None,
            spare: None,
        }
    }

    /// Makes this part `source` again, as `clone_from` does (its value shared), keeping the
    /// value it replaces, if it was this part's own, for the next mutable borrow to copy into:
    /// for a scratch copy taking input after input.
    pub fn restore_from(&mut self, source: &Hashed<T>) {
        if !Arc::ptr_eq(&self.value, &source.value) {
            let old = std::mem::replace(&mut self.value, Arc::clone(&source.value));
            if Arc::strong_count(&old) == 1 {
                self.spare = Some(old);
            }
        }
        self.hash = source.hash;
    }

    /// Whether this part and `other` share one value: one is a copy of the other (or both of a
    /// third) that no mutable borrow has changed since. What a step leaves shared costs no copy
    /// and keeps its hash.
    pub fn shares(&self, other: &Hashed<T>) -> bool {
        Arc::ptr_eq(&self.value, &other.value)
    }
}

impl<T: Hash> Hashed<T> {
    /// Keeps the value's hash, hashing it unless it was kept and the value not borrowed
    /// mutably since.
    pub fn refresh(&mut self) {
        if self.hash.is_none() {
            self.hash = Some(hash_of(&*self.value));
        }
    }

    /// The value's hash, the kept one if there is one.
    pub fn hash_value(&self) -> u64 {
        self.hash.unwrap_or_else(|| hash_of(&*self.value))
    }
}

/// The one hash of a part: foldhash's quality hasher with a fixed seed, the same on every run
/// and machine.
fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    foldhash::quality::FixedState::with_seed(SEED).hash_one(value)
}

/// Any constant will do; it only has to be the same everywhere.
const SEED: u64 = 0x6861_7368_6564_7061;

impl<T: Hash> Hash for Hashed<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash_value());
    }
}

impl<T> Deref for Hashed<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

/// A mutable borrow forgets the kept hash and makes the value this part's own: a shared value is
/// copied, into the spare one if there is one, so the parts sharing it are left as they were.
impl<T: Clone + CopyInPlace> DerefMut for Hashed<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.hash = None;
        if Arc::get_mut(&mut self.value).is_none() {
            if let Some(mut spare) = self.spare.take() {
                if let Some(own) = Arc::get_mut(&mut spare) {
                    own.copy_from(&self.value);
                    self.value = spare;
                }
            }
        }
        Arc::make_mut(&mut self.value)
    }
}

/// A copy shares the value (no copy of it is made) and keeps the kept hash.
impl<T> Clone for Hashed<T> {
    fn clone(&self) -> Hashed<T> {
        Hashed {
            value: Arc::clone(&self.value),
            hash: self.hash,
            spare: None,
        }
    }

    /// Shares the source's value; keeps no spare (a state kept in a frontier holds none).
    fn clone_from(&mut self, source: &Hashed<T>) {
        self.value = Arc::clone(&source.value);
        self.hash = source.hash;
    }
}

impl<T: PartialEq> PartialEq for Hashed<T> {
    fn eq(&self, other: &Hashed<T>) -> bool {
        Arc::ptr_eq(&self.value, &other.value) || self.value == other.value
    }
}

impl<T: Eq> Eq for Hashed<T> {}

impl<T: fmt::Debug> fmt::Debug for Hashed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: Serialize> Serialize for Hashed<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<T> From<T> for Hashed<T> {
    fn from(value: T) -> Hashed<T> {
        Hashed::new(value)
    }
}

impl<A, T: FromIterator<A>> FromIterator<A> for Hashed<T> {
    fn from_iter<I: IntoIterator<Item = A>>(items: I) -> Hashed<T> {
        Hashed::new(items.into_iter().collect())
    }
}

impl<'a, T> IntoIterator for &'a Hashed<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        (&*self.value).into_iter()
    }
}

/// A copy in place that keeps the buffers `self` holds: a [`Hashed`] part's value is copied so.
/// A struct made `Clone` by `clone_in_place!` is one (its `clone_from`); a litemap is copied by
/// `crate::clone_map_from` (its own `clone_from` clones afresh).
pub trait CopyInPlace {
    fn copy_from(&mut self, source: &Self);
}

impl<K: Clone, V: Clone> CopyInPlace for litemap::LiteMap<K, V> {
    fn copy_from(&mut self, source: &Self) {
        crate::clone_map_from(self, source);
    }
}

/// `CopyInPlace` for types whose own `clone_from` keeps their buffers.
macro_rules! copy_in_place_by_clone_from {
    ($(impl$(<$g:ident>)? for $ty:ty;)*) => {$(
        impl$(<$g: Clone>)? $crate::CopyInPlace for $ty {
            fn copy_from(&mut self, source: &Self) {
                self.clone_from(source);
            }
        }
    )*};
}
pub(crate) use copy_in_place_by_clone_from;

copy_in_place_by_clone_from! {
    impl<T> for Vec<T>;
    impl<T> for std::collections::VecDeque<T>;
    impl for String;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_hash_is_the_hash_of_the_value_and_a_mutable_borrow_forgets_it() {
        let mut part = Hashed::new(vec![1u8, 2, 3]);
        let fresh = part.hash_value();
        part.refresh();
        assert_eq!(part.hash, Some(fresh), "refresh keeps the value's hash");
        assert_eq!(part.hash_value(), fresh);
        part.push(4);
        assert_eq!(part.hash, None, "a mutable borrow forgets the kept hash");
        assert_ne!(part.hash_value(), fresh, "the changed value hashes anew");
        assert_eq!(
            part.hash_value(),
            Hashed::new(vec![1u8, 2, 3, 4]).hash_value()
        );
    }

    #[test]
    fn copies_share_the_value_keep_the_hash_and_compare_as_their_values() {
        let mut source = Hashed::new(String::from("a"));
        source.refresh();
        let copy = source.clone();
        assert!(Arc::ptr_eq(&copy.value, &source.value), "a copy shares");
        assert_eq!(copy.hash, source.hash);
        let mut over = Hashed::new(String::from("other"));
        over.clone_from(&source);
        assert!(Arc::ptr_eq(&over.value, &source.value));
        assert_eq!((over.hash, over.as_str()), (source.hash, "a"));
        assert!(over.spare.is_none(), "a copy in place keeps no spare");
        assert_eq!(
            Hashed::new(String::from("a")),
            source,
            "shared or not, equal values are equal"
        );
        assert_ne!(Hashed::from(String::from("b")), source);
    }

    /// `[1]`, its hash kept, and a copy of it that pushed a 2.
    fn a_source_and_a_changed_copy() -> (Hashed<Vec<u8>>, Hashed<Vec<u8>>) {
        let mut source = Hashed::new(vec![1u8]);
        source.refresh();
        let mut copy = source.clone();
        copy.push(2);
        (source, copy)
    }

    #[test]
    fn a_mutable_borrow_of_a_shared_value_changes_this_part_alone() {
        let (source, copy) = a_source_and_a_changed_copy();
        assert_eq!((&*source, &*copy), (&vec![1], &vec![1, 2]));
        assert_eq!(source.hash, Some(Hashed::new(vec![1u8]).hash_value()));
        assert_eq!(Arc::strong_count(&source.value), 1, "the copy has its own");
    }

    #[test]
    fn a_restored_part_is_its_source_and_its_own_value_is_copied_into_next() {
        let (source, mut scratch) = a_source_and_a_changed_copy();
        // Its own value, known by its buffer (an address could be reused by a new one).
        scratch.reserve(64);
        let own = Arc::as_ptr(&scratch.value);
        scratch.restore_from(&source);
        assert!(Arc::ptr_eq(&scratch.value, &source.value));
        assert_eq!((&*scratch, scratch.hash), (&vec![1], source.hash));
        assert_eq!(
            scratch.spare.as_ref().map(Arc::as_ptr),
            Some(own),
            "the value it had to itself is kept"
        );
        scratch.push(3);
        assert!(
            scratch.capacity() >= 64,
            "the next change is copied into the kept value"
        );
        assert_eq!((&*scratch, &*source), (&vec![1, 3], &vec![1]));
        assert!(scratch.spare.is_none());
        // A value shared with another copy is not its own: not kept, and left as it was.
        let kept = scratch.clone();
        scratch.restore_from(&source);
        assert!(scratch.spare.is_none());
        assert_eq!(*kept, vec![1, 3]);
        // Restoring over a part that shares the source's value already changes nothing.
        let mut same = source.clone();
        same.restore_from(&source);
        assert!(same.spare.is_none() && Arc::ptr_eq(&same.value, &source.value));
    }

    #[test]
    fn a_part_is_printed_collected_and_iterated_as_its_value() {
        let part: Hashed<Vec<u8>> = [3u8, 1].into_iter().collect();
        assert_eq!(*part, vec![3, 1]);
        assert_eq!(format!("{part:?}"), "[3, 1]");
        assert_eq!((&part).into_iter().copied().collect::<Vec<_>>(), vec![3, 1]);
    }
}
