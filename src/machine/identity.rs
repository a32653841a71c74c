//! Which machine a report (or a merged report's case) was measured on (issue 67, item 5):
//! more than its host name and CPU model, which two runners cloned from one image share (two
//! CI VMs called `vm` with the same "AMD EPYC"). Three facts tell them apart: the machine id
//! (`/etc/machine-id`, recorded only as a keyed hash, as systemd advises for an id an
//! application keeps), the board (DMI's vendor and name) and the memory size in whole GiB.
//! [`Machines`] names each machine of a set of records: the plain `host (CPU; GPU)` label
//! ([`SystemInfo::machine`]) while nothing else shares it, else that label with the facts
//! that differ. A record without the new facts (a report written before them) is the machine
//! whose facts it does not contradict when exactly one does, so a history does not split at
//! the upgrade; where two could be it, it stays a machine of its own.
//!
//! Must not: read reports or decide anything about a run; it names machines.
use std::collections::BTreeMap;

use super::system::SystemInfo;

/// The facts of one record that tell machines of one label apart; `None` where unknown.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Facts {
    machine_id: Option<String>,
    board: Option<String>,
    memory_gib: Option<u64>,
}

impl Facts {
    fn of(s: &SystemInfo) -> Facts {
        Facts {
            machine_id: s.machine_id.clone(),
            board: s.board.clone(),
            memory_gib: s.memory_total_bytes.map(memory_gib),
        }
    }

    /// How many facts are known: the more, the more a record says of its machine.
    fn known(&self) -> usize {
        [
            self.machine_id.is_some(),
            self.board.is_some(),
            self.memory_gib.is_some(),
        ]
        .iter()
        .filter(|k| **k)
        .count()
    }

    /// No fact both know differs.
    fn agrees(&self, other: &Facts) -> bool {
        fn same<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
        }
        same(&self.machine_id, &other.machine_id)
            && same(&self.board, &other.board)
            && same(&self.memory_gib, &other.memory_gib)
    }
}

/// Whether `a` and `b` can be records of one machine: one label ([`SystemInfo::machine`])
/// and no fact both know differs.
pub fn same_machine(a: &SystemInfo, b: &SystemInfo) -> bool {
    a.machine() == b.machine() && Facts::of(a).agrees(&Facts::of(b))
}

/// One fact of a record as its name shows it (`None`: not recorded).
type Fact = fn(&Facts) -> Option<String>;

/// Memory in whole GiB, rounded: the kernel's `MemTotal` moves by megabytes between kernel
/// versions, which must not make another machine.
fn memory_gib(bytes: u64) -> u64 {
    ((bytes as f64) / (1u64 << 30) as f64).round() as u64
}

/// The machines of a set of system records, each with a name no other machine of the set has.
#[derive(Debug, Default)]
pub struct Machines {
    /// By label ([`SystemInfo::machine`]): each distinct set of facts, with its machine's name.
    names: BTreeMap<String, Vec<(Facts, String)>>,
}

impl Machines {
    /// The machines of `systems` (every record a name may later be asked for).
    pub fn of<'a>(systems: impl IntoIterator<Item = &'a SystemInfo>) -> Machines {
        let mut by_label: BTreeMap<String, Vec<Facts>> = BTreeMap::new();
        for s in systems {
            let facts = by_label.entry(s.machine()).or_default();
            let f = Facts::of(s);
            if !facts.contains(&f) {
                facts.push(f);
            }
        }
        let names = by_label
            .into_iter()
            .map(|(label, facts)| {
                let named = name_group(&label, facts);
                (label, named)
            })
            .collect();
        Machines { names }
    }

    /// The name of the machine `s` was measured on: its label when no other machine of the
    /// set shares it, else the label with the facts that tell them apart.
    pub fn name(&self, s: &SystemInfo) -> String {
        let label = s.machine();
        let f = Facts::of(s);
        self.names
            .get(&label)
            .and_then(|named| named.iter().find(|(g, _)| *g == f))
            .map(|(_, n)| n.clone())
            .unwrap_or(label)
    }

    /// Every machine's name, sorted, each once.
    pub fn all(&self) -> Vec<String> {
        let mut v: Vec<String> = self.names.values().flatten().map(|(_, n)| n.clone()).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The machines among the distinct `facts` of one label, each fact set with its machine's
/// name. The most specific sets found the machines; a set joins the one machine it agrees
/// with, or founds its own when it agrees with none or with several.
fn name_group(label: &str, mut facts: Vec<Facts>) -> Vec<(Facts, String)> {
    facts.sort_by(|a, b| b.known().cmp(&a.known()).then_with(|| a.cmp(b)));
    // Each machine: the facts that founded it, and its members.
    let mut machines: Vec<(Facts, Vec<Facts>)> = Vec::new();
    for f in facts {
        let agreeing: Vec<usize> = machines
            .iter()
            .enumerate()
            .filter(|(_, (founder, members))| founder.agrees(&f) && members.iter().all(|m| m.agrees(&f)))
            .map(|(i, _)| i)
            .collect();
        match agreeing.as_slice() {
            [one] => machines[*one].1.push(f),
            _ => machines.push((f.clone(), vec![f])),
        }
    }
    if machines.len() == 1 {
        let (_, members) = machines.pop().expect("one machine");
        return members.into_iter().map(|f| (f, label.to_string())).collect();
    }
    // Which facts differ between the machines: those are named. A fact is named where two
    // machines know it and it differs (a record without it is then said not to have it).
    let fields: [(Fact, &str); 3] = [
        (
            |f| f.machine_id.as_ref().map(|id| id.chars().take(8).collect()),
            "machine id",
        ),
        (|f| f.board.clone(), "board"),
        (|f| f.memory_gib.map(|g| format!("{g} GiB")), "memory"),
    ];
    let named: Vec<bool> = fields
        .iter()
        .map(|(get, _)| {
            let values: std::collections::BTreeSet<String> = machines.iter().filter_map(|(f, _)| get(f)).collect();
            values.len() > 1
        })
        .collect();
    let mut out = Vec::new();
    let mut taken = std::collections::BTreeSet::new();
    for (founder, members) in machines {
        let parts: Vec<String> = fields
            .iter()
            .zip(&named)
            .filter(|(_, named)| **named)
            .map(|(field, _)| field)
            .map(|(get, what)| match get(&founder) {
                Some(v) if *what == "memory" => v,
                Some(v) => format!("{what} {v}"),
                None => format!("{what} not recorded"),
            })
            .collect();
        let mut name = with_facts(label, &parts.join(", "));
        // Two records that agree with the same machines and differ only in what they did
        // not record: numbered, never one name for two machines.
        let mut n = 1;
        while !taken.insert(name.clone()) {
            n += 1;
            name = with_facts(label, &format!("{}, #{n}", parts.join(", ")));
        }
        out.extend(members.into_iter().map(|f| (f, name.clone())));
    }
    out
}

/// `host (CPU; facts)` from `host (CPU)`.
fn with_facts(label: &str, facts: &str) -> String {
    match label.strip_suffix(')') {
        Some(open) => format!("{open}; {facts})"),
        None => format!("{label} ({facts})"),
    }
}

/// The distinct machines of `systems`, sorted, each by its name ([`Machines`]: two runners
/// of one host name and CPU are two).
pub fn distinct_machines<'a>(systems: impl IntoIterator<Item = &'a SystemInfo>) -> Vec<String> {
    Machines::of(systems).all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(id: Option<&str>, board: Option<&str>, gib: u64) -> SystemInfo {
        SystemInfo {
            hostname: Some("vm".into()),
            cpu_model: Some("AMD EPYC".into()),
            machine_id: id.map(str::to_string),
            board: board.map(str::to_string),
            memory_total_bytes: Some(gib << 30),
            ..Default::default()
        }
    }

    #[test]
    fn one_machine_keeps_its_plain_label_and_an_old_record_joins_it() {
        let (new, old) = (vm(Some("aaaa1111"), Some("QEMU"), 24), vm(None, None, 24));
        let m = Machines::of([&new, &old]);
        assert_eq!(m.name(&new), "vm (AMD EPYC)");
        assert_eq!(m.name(&old), "vm (AMD EPYC)");
        assert_eq!(m.all(), vec!["vm (AMD EPYC)".to_string()]);
    }

    #[test]
    fn two_runners_of_one_name_and_cpu_are_two_machines() {
        let (a, b) = (
            vm(Some("aaaa1111"), Some("QEMU"), 24),
            vm(Some("bbbb2222"), Some("QEMU"), 24),
        );
        let m = Machines::of([&a, &b]);
        assert_eq!(m.name(&a), "vm (AMD EPYC; machine id aaaa1111)");
        assert_eq!(m.name(&b), "vm (AMD EPYC; machine id bbbb2222)");
        // Cloned from one image (one machine id), told apart by their memory.
        let (c, d) = (vm(Some("cccc"), Some("QEMU"), 24), vm(Some("cccc"), Some("QEMU"), 16));
        let m = Machines::of([&c, &d]);
        assert_eq!(m.name(&c), "vm (AMD EPYC; 24 GiB)");
        assert_eq!(m.name(&d), "vm (AMD EPYC; 16 GiB)");
        // An old record that either could be stays a machine of its own.
        let old = vm(None, None, 24);
        let m = Machines::of([&a, &b, &old]);
        assert_eq!(m.all().len(), 3, "{:?}", m.all());
        assert_eq!(m.name(&old), "vm (AMD EPYC; machine id not recorded)");
        // One it can be only: it joins that one.
        let small = vm(None, None, 16);
        let m = Machines::of([&c, &d, &small]);
        assert_eq!(m.name(&small), m.name(&d));
    }

    #[test]
    fn memory_moving_by_megabytes_is_one_machine() {
        let mut a = vm(Some("x"), None, 24);
        let mut b = a.clone();
        a.memory_total_bytes = Some((24 << 30) - (40 << 20));
        b.memory_total_bytes = Some((24 << 30) + (12 << 20));
        assert_eq!(Machines::of([&a, &b]).all().len(), 1);
    }
}
