//! [`Id`]: the fence machine's names (tokens, request ids, roots, tasks, workers), a string kept
//! inline up to 32 bytes.
//!
//! Tokens and request ids are typically 32 hex digits (a UUID's 128 bits): inline, cloning one
//! copies its buffer and allocates nothing, where a string inline only to 24 bytes allocates on
//! every clone, and the machine clones its ids into every output it makes. A longer id (a
//! malformed one, which the supervisor refuses) is kept on the heap.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Up to 32 bytes, inline: cloned by copying the buffer whole, with no call and no branch on
/// its length.
type Inline = arrayvec::ArrayString<32>;

#[derive(Clone)]
enum Repr {
    Inline(Inline),
    Heap(Box<str>),
}

/// A fence name: a string, inline up to 32 bytes. Compared, ordered and hashed as its `str`.
#[derive(Clone)]
pub struct Id(Repr);

impl Id {
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline(s) => s.as_str(),
            Repr::Heap(s) => s,
        }
    }

    /// An id formatted in place, allocating nothing when it fits inline:
    /// `Id::format(format_args!("q{n}"))`.
    pub fn format(args: fmt::Arguments<'_>) -> Id {
        let mut inline = Inline::new();
        match fmt::Write::write_fmt(&mut inline, args) {
            Ok(()) => Id(Repr::Inline(inline)),
            Err(_) => Id::from(fmt::format(args)),
        }
    }
}

impl Default for Id {
    fn default() -> Id {
        Id(Repr::Inline(Inline::new()))
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Id) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Id {}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Id) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Id {
    fn cmp(&self, other: &Id) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for Id {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl Deref for Id {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Id {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Id {
        match Inline::from(s) {
            Ok(inline) => Id(Repr::Inline(inline)),
            Err(_) => Id(Repr::Heap(s.into())),
        }
    }
}

impl From<String> for Id {
    fn from(s: String) -> Id {
        match Inline::from(&s) {
            Ok(inline) => Id(Repr::Inline(inline)),
            Err(_) => Id(Repr::Heap(s.into_boxed_str())),
        }
    }
}

impl PartialEq<str> for Id {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Id {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Id {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Id, D::Error> {
        deserializer.deserialize_str(IdVisitor)
    }
}

/// Reads an id from a borrowed or an owned string alike, copying it only where it is kept.
struct IdVisitor;

impl serde::de::Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Id, E> {
        Ok(Id::from(s))
    }

    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Id, E> {
        Ok(Id::from(s))
    }
}

/// Serialized as a `String`, so its schema is `String`'s, inline, under `String`'s name.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Id {
    fn inline_schema() -> bool {
        String::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}
