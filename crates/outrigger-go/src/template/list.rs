//! Lists built by template functions ([`GoList`]): a value shares its elements with every copy
//! of it and with the lists appended from it, as a Go slice header shares its array, so that
//! copying a list (binding a variable, passing an argument) and appending to the newest list
//! cost O(1) (amortised) instead of a copy of the list. Istio's templates build a list by
//! `append` inside a loop over the pod's containers; copying on each call made that quadratic.
//!
//! What a list value holds never changes once made: a value sees exactly the first `len`
//! elements of its buffer, and elements are only ever added beyond the longest list sharing the
//! buffer. Sprig's `append` returns a new list with the old one unchanged (it copies in Go),
//! which is what [`GoList::push`] gives, whether it shares the buffer or copies.

use std::cell::{Ref, RefCell};
use std::fmt;
use std::rc::Rc;

/// An element of a [`GoList`]: whether it is itself a container (a list or map), which the
/// list tracks so that a list holding none is known flat without a walk.
pub trait Element: Clone {
    /// Whether the element holds other values (a list or a map).
    fn is_container(&self) -> bool;
}

/// An immutable list value over a buffer shared with other lists (see the module's text).
pub struct GoList<T> {
    buf: Rc<RefCell<Vec<T>>>,
    len: usize,
    /// None of the elements is a container.
    flat: bool,
}

impl<T> Clone for GoList<T> {
    fn clone(&self) -> Self {
        GoList {
            buf: self.buf.clone(),
            len: self.len,
            flat: self.flat,
        }
    }
}

impl<T: Element + fmt::Debug> fmt::Debug for GoList<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items().iter()).finish()
    }
}

impl<T: Element> FromIterator<T> for GoList<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        GoList::new(iter.into_iter().collect())
    }
}

impl<T: Element> GoList<T> {
    /// A list of `items`.
    pub fn new(items: Vec<T>) -> Self {
        GoList {
            len: items.len(),
            flat: !items.iter().any(T::is_container),
            buf: Rc::new(RefCell::new(items)),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list has no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether no element is a list or a map (known without looking at the elements).
    pub fn is_flat(&self) -> bool {
        self.flat
    }

    /// The elements. The buffer is only ever changed inside [`GoList::push`], which never
    /// waits for a reader (it copies instead), so this borrow cannot conflict.
    pub fn items(&self) -> Ref<'_, [T]> {
        Ref::map(self.buf.borrow(), |v| &v[..self.len])
    }

    /// A copy of the elements.
    pub fn to_vec(&self) -> Vec<T> {
        self.items().to_vec()
    }

    /// The list with `item` added at the end; `self` is unchanged. Amortised O(1) when `self`
    /// is the longest list over its buffer (nothing was appended to it before), as when a loop
    /// appends to the list it built so far; otherwise the elements are copied once into a new
    /// buffer, as Sprig's `append` always does.
    pub fn push(&self, item: T) -> GoList<T> {
        if let Ok(mut buf) = self.buf.try_borrow_mut() {
            if buf.len() == self.len {
                let flat = self.flat && !item.is_container();
                buf.push(item);
                return GoList {
                    buf: self.buf.clone(),
                    len: self.len + 1,
                    flat,
                };
            }
        }
        crate::work::count(self.len as u64);
        let mut items = Vec::with_capacity(self.len + 1);
        items.extend_from_slice(&self.items());
        items.push(item);
        GoList::new(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Element for u32 {
        fn is_container(&self) -> bool {
            false
        }
    }

    impl Element for usize {
        fn is_container(&self) -> bool {
            *self == usize::MAX
        }
    }

    fn items(l: &GoList<u32>) -> Vec<u32> {
        l.to_vec()
    }

    #[test]
    fn appending_leaves_every_earlier_list_unchanged() {
        let empty: GoList<u32> = GoList::new(Vec::new());
        let a = empty.push(1);
        let b = a.push(2);
        // `a` is no longer the longest list over the buffer: appending to it again copies.
        let c = a.push(3);
        let d = b.push(4);
        let e = b.push(5);
        assert_eq!(items(&empty), Vec::<u32>::new());
        assert_eq!(items(&a), [1]);
        assert_eq!(items(&b), [1, 2]);
        assert_eq!(items(&c), [1, 3]);
        assert_eq!(items(&d), [1, 2, 4]);
        assert_eq!(items(&e), [1, 2, 5]);
        assert_eq!((a.len(), b.len(), e.len()), (1, 2, 3));
        assert_eq!(b.items().get(1), Some(&2));
        assert_eq!(
            b.items().get(2),
            None,
            "a later element of the buffer is not this list's"
        );
    }

    #[test]
    fn a_loop_of_appends_shares_one_buffer() {
        let mut l: GoList<usize> = GoList::new(Vec::new());
        let first = l.clone();
        for i in 0..10_000 {
            let held = l.clone(); // the variable still holds the old list while appending
            l = held.push(i);
        }
        assert!(Rc::ptr_eq(&l.buf, &first.buf), "no copy was made");
        assert_eq!(l.len(), 10_000);
        assert_eq!(l.items().get(9_999), Some(&9_999));
        assert!(first.is_empty());
        assert!(l.is_flat());
        let nested = l.push(usize::MAX);
        assert!(!nested.is_flat() && l.is_flat(), "flat is per list value");
    }

    #[test]
    fn appending_while_the_list_is_read_copies() {
        let l = GoList::new(vec![1u32, 2]);
        let reading = l.items();
        let m = l.push(3);
        assert_eq!(&*reading, &[1, 2]);
        drop(reading);
        assert_eq!(items(&m), [1, 2, 3]);
        assert_eq!(items(&l), [1, 2]);
    }
}
