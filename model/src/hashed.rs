//! [`Hashed`]: a part of a state that keeps its own hash, and knows whether it changed since it
//! was copied, so a state whose step changed a few of its parts is fingerprinted by hashing
//! those few again, and copied back by copying those few.
//!
//! An explorer fingerprints every state it reaches, and most steps touch a part or two of a state
//! (a worker and the queue; one turn and the store) and leave the others as they were. A part
//! wrapped in `Hashed` is hashed as one `u64`: its value's hash, kept from the last
//! [`refresh`](Hashed::refresh) until the part is borrowed mutably (any `&mut`, changed or not,
//! forgets it). Without a kept hash the value is hashed on the spot, to the same `u64`: whether a
//! hash was kept never changes a fingerprint, only what it costs. A part also notes a mutable
//! borrow since it was last copied from a source ([`restore_from`](Hashed::restore_from) then
//! copies it back; one not borrowed still equals the source). Nothing here is shared or mutable
//! behind a `&`: a kept hash and the note are set through `&mut self` only.

use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::{Deref, DerefMut};

use serde::{Serialize, Serializer};

/// A value and, once [refreshed](Hashed::refresh) and until borrowed mutably, its hash.
/// Compared, printed and serialized as its value; hashed as its value's hash (a `u64`).
pub struct Hashed<T> {
    value: T,
    hash: Option<u64>,
    /// Borrowed mutably since it was last copied from a source (a new part has none: set).
    touched: bool,
}

impl<T: Default> Default for Hashed<T> {
    fn default() -> Hashed<T> {
        Hashed {
            value: T::default(),
            hash: None,
            touched: true,
        }
    }
}

impl<T> Hashed<T> {
    pub fn new(value: T) -> Hashed<T> {
        Hashed {
            value,
            hash: None,
            touched: true,
        }
    }
}

impl<T: Hash> Hashed<T> {
    /// Keeps the value's hash, hashing it unless it was kept and the value not borrowed
    /// mutably since.
    pub fn refresh(&mut self) {
        if self.hash.is_none() {
            self.hash = Some(hash_of(&self.value));
        }
    }

    /// The value's hash, the kept one if there is one.
    pub fn hash_value(&self) -> u64 {
        self.hash.unwrap_or_else(|| hash_of(&self.value))
    }
}

impl<T: CopyInPlace> Hashed<T> {
    /// Makes this part, a copy of `source` (`clone`, `clone_from` or `restore_from`), `source`
    /// again: copied in place if it was borrowed mutably since, else left as it is (it still
    /// equals `source`). Over a part that is not such a copy, the value is unspecified.
    pub fn restore_from(&mut self, source: &Hashed<T>) {
        if self.touched {
            self.value.copy_from(&source.value);
            self.hash = source.hash;
            self.touched = false;
        }
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

/// A mutable borrow forgets the kept hash and is noted: the value may change through it.
impl<T> DerefMut for Hashed<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.hash = None;
        self.touched = true;
        &mut self.value
    }
}

/// A copy keeps the source's kept hash and is untouched; a copy in place also keeps the value's
/// buffers ([`CopyInPlace`]).
impl<T: Clone + CopyInPlace> Clone for Hashed<T> {
    fn clone(&self) -> Hashed<T> {
        Hashed {
            value: self.value.clone(),
            hash: self.hash,
            touched: false,
        }
    }

    fn clone_from(&mut self, source: &Hashed<T>) {
        self.value.copy_from(&source.value);
        self.hash = source.hash;
        self.touched = false;
    }
}

impl<T: PartialEq> PartialEq for Hashed<T> {
    fn eq(&self, other: &Hashed<T>) -> bool {
        self.value == other.value
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
        self.value.into_iter()
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
    fn copies_keep_the_hash_and_compare_as_their_values() {
        let mut source = Hashed::new(String::from("a"));
        source.refresh();
        let copy = source.clone();
        assert_eq!(copy.hash, source.hash);
        let mut over = Hashed::new(String::from("other"));
        over.clone_from(&source);
        assert_eq!((over.hash, over.as_str()), (source.hash, "a"));
        assert_eq!(
            Hashed::new(String::from("a")),
            source,
            "kept or not, equal values are equal"
        );
        assert_ne!(Hashed::from(String::from("b")), source);
    }

    #[test]
    fn a_restored_copy_is_its_source_and_only_a_touched_one_is_copied_back() {
        let mut source = Hashed::new(vec![1u8]);
        source.refresh();
        let mut copy = source.clone();
        assert!(!copy.touched, "a copy is untouched");
        copy.push(2);
        assert!(copy.touched, "a mutable borrow is noted");
        copy.restore_from(&source);
        assert_eq!(
            (&*copy, copy.hash, copy.touched),
            (&vec![1], source.hash, false)
        );
        let mut over = Hashed::new(vec![7u8, 7]);
        over.clone_from(&source);
        assert!(!over.touched, "a copy in place is untouched");
        // Not touched since the copy: left as it is (a value it could not have is kept, which
        // shows that it was not copied).
        let mut untouched = Hashed {
            value: vec![9u8],
            hash: None,
            touched: false,
        };
        untouched.restore_from(&source);
        assert_eq!(*untouched, vec![9]);
        assert!(Hashed::<Vec<u8>>::default().touched && Hashed::new(vec![0u8]).touched);
    }

    #[test]
    fn a_part_is_printed_collected_and_iterated_as_its_value() {
        let part: Hashed<Vec<u8>> = [3u8, 1].into_iter().collect();
        assert_eq!(*part, vec![3, 1]);
        assert_eq!(format!("{part:?}"), "[3, 1]");
        assert_eq!((&part).into_iter().copied().collect::<Vec<_>>(), vec![3, 1]);
    }
}
