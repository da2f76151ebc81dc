//! Breakers keyed at run time: one per distinct key, all configured by one name.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::breaker::shared::Env;
use crate::breaker::CircuitBreaker;
use crate::concurrent_map::ConcurrentMap;
use crate::config::Config;
use crate::registry::hooks::{Hooks, RegistryEvent};

/// A keyed group with its key type erased, so the registry can list its breakers.
trait AnyGroup: Any + Send + Sync {
    fn for_each_breaker(&self, f: &mut dyn FnMut(&CircuitBreaker));
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// A registry's keyed groups, by name and key type.
#[derive(Default)]
pub(crate) struct KeyedGroups(Mutex<HashMap<(String, TypeId), Arc<dyn AnyGroup>>>);

impl KeyedGroups {
    /// The group `name` for keys of type `K`, made with `config` on first use.
    pub(crate) fn group<K>(
        &self,
        name: &str,
        config: impl FnOnce() -> Config,
        env: &Arc<Env>,
        hooks: &Arc<Hooks>,
    ) -> Keyed<K>
    where
        K: Hash + Eq + Clone + fmt::Display + Send + Sync + 'static,
    {
        let mut groups = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let group = groups
            .entry((name.to_owned(), TypeId::of::<K>()))
            .or_insert_with(|| {
                Arc::new(KeyedGroup::<K> {
                    name: name.to_owned(),
                    config: config(),
                    env: Arc::clone(env),
                    breakers: ConcurrentMap::new(),
                    hooks: Arc::clone(hooks),
                })
            });
        let group = Arc::clone(group)
            .as_any()
            .downcast::<KeyedGroup<K>>()
            .unwrap_or_else(|_| unreachable!("keyed groups are stored under their key's TypeId"));
        Keyed {
            group,
            _key: PhantomData,
        }
    }

    /// Calls `f` for every breaker of every group.
    pub(crate) fn for_each_breaker(&self, f: &mut dyn FnMut(&CircuitBreaker)) {
        let groups: Vec<Arc<dyn AnyGroup>> = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for group in groups {
            group.for_each_breaker(f);
        }
    }
}

struct KeyedGroup<K> {
    name: String,
    config: Config,
    env: Arc<Env>,
    breakers: ConcurrentMap<K, CircuitBreaker>,
    hooks: Arc<Hooks>,
}

impl<K: Hash + Eq + Send + Sync + 'static> AnyGroup for KeyedGroup<K> {
    fn for_each_breaker(&self, f: &mut dyn FnMut(&CircuitBreaker)) {
        self.breakers.for_each(|_, b| f(b));
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// Breakers created per run-time key, all configured as one name. See
/// [`Registry::keyed`](crate::Registry::keyed).
///
/// Looking up a key that exists takes no lock.
pub struct Keyed<K> {
    group: Arc<KeyedGroup<K>>,
    _key: PhantomData<fn(K)>,
}

impl<K> Clone for Keyed<K> {
    fn clone(&self) -> Self {
        Keyed {
            group: Arc::clone(&self.group),
            _key: PhantomData,
        }
    }
}

impl<K> Keyed<K>
where
    K: Hash + Eq + Clone + fmt::Display + Send + Sync + 'static,
{
    /// The breaker for a key given in borrowed form (a `&str` for `String` keys), created on
    /// first use. Looking up a key that exists allocates nothing.
    pub fn get_by<Q>(&self, key: &Q) -> &CircuitBreaker
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(b) = self.group.breakers.get(key) {
            return b;
        }
        self.get(&key.to_owned())
    }

    /// The breaker for `key`, created on first use.
    pub fn get(&self, key: &K) -> &CircuitBreaker {
        if let Some(b) = self.group.breakers.get(key) {
            return b;
        }
        let group = &*self.group;
        let mut created = false;
        let breaker = group.breakers.get_or_insert_with(key.clone(), || {
            created = true;
            let name = format!("{}:{}", group.name, key);
            CircuitBreaker::with_env(&name, group.config.clone(), Arc::clone(&group.env))
        });
        if created {
            group.hooks.run(&RegistryEvent::Added(breaker));
        }
        breaker
    }

    /// The name the keys are configured by.
    pub fn name(&self) -> &str {
        &self.group.name
    }

    /// How many keys have a breaker.
    pub fn len(&self) -> usize {
        self.group.breakers.len()
    }

    /// Whether no key has a breaker yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K> fmt::Debug for Keyed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("name", &self.group.name)
            .finish_non_exhaustive()
    }
}
