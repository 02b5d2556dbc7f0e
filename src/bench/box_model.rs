//! Boxes and tests per second on a machine of many cores, from what one box costs here: an
//! Amdahl model in throughput form. An item (a test, a request) costs `C` ms of CPU, all of it
//! parallel but `S` ms (its boxes' serialized part: work that runs one at a time machine-wide,
//! under one lock or on one kernel worker). With `n` cores busy,
//!
//! ```text
//! X(n) = n / (C + S·(n − 1))   items per ms
//! ```
//!
//! which is `n / C` while the serialized work is rare, and tends to `1 / S` as it fills its lock.
//! The two lines meet at `n = C / S`, the core count where the workload saturates: beyond it,
//! cores add less than half their worth.

/// A kind of item the judge runs, by what it costs on one core here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    pub name: &'static str,
    /// Fresh boxes an item takes (a process each).
    pub boxes_per_item: f64,
    /// A worker's time per item, in ms, on the development VM (its boxes included).
    pub cpu_ms_per_item: f64,
}

/// The three workloads of the evaluation, as measured on the development VM
/// (docs/benchmarks.md): a Batch test of `aplusb` (the solution's box and the checker's, 9.0–10.3
/// ms of a worker's time), a Communication test of `machine` (the manager's box and the
/// solution's, 13.5–16.0 ms), and an RL `/run_code` Python request (one box, 50 ms).
pub const WORKLOADS: [Workload; 3] = [
    Workload {
        name: "Batch test with a checker (aplusb)",
        boxes_per_item: 2.0,
        cpu_ms_per_item: 9.5,
    },
    Workload {
        name: "Communication test (machine)",
        boxes_per_item: 2.0,
        cpu_ms_per_item: 14.6,
    },
    Workload {
        name: "RL /run_code Python request",
        boxes_per_item: 1.0,
        cpu_ms_per_item: 50.0,
    },
];

/// Items per second on `cores` cores, with `serial_ms_per_box` of each box serialized.
pub fn items_per_second(workload: &Workload, serial_ms_per_box: f64, cores: f64) -> f64 {
    let serial = workload.boxes_per_item * serial_ms_per_box;
    1e3 * cores / (workload.cpu_ms_per_item + serial * (cores - 1.0).max(0.0))
}

/// The ceiling: items per second once the serialized work fills its lock.
pub fn ceiling_per_second(workload: &Workload, serial_ms_per_box: f64) -> f64 {
    1e3 / (workload.boxes_per_item * serial_ms_per_box)
}

/// The core count where the workload saturates: `C / S`.
pub fn saturation_cores(workload: &Workload, serial_ms_per_box: f64) -> f64 {
    workload.cpu_ms_per_item / (workload.boxes_per_item * serial_ms_per_box)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Workload = Workload {
        name: "a test",
        boxes_per_item: 2.0,
        cpu_ms_per_item: 10.0,
    };

    #[test]
    fn one_core_runs_an_item_per_its_cpu_time() {
        assert!((items_per_second(&TEST, 0.1, 1.0) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn many_cores_approach_the_ceiling_of_the_serialized_part() {
        // 0.1 ms a box, 2 boxes a test: 0.2 ms serialized, at most 5 000 tests/s.
        assert!((ceiling_per_second(&TEST, 0.1) - 5000.0).abs() < 1e-9);
        let huge = items_per_second(&TEST, 0.1, 1e7);
        assert!(huge < 5000.0 && huge > 4990.0, "{huge}");
    }

    #[test]
    fn it_saturates_where_the_parallel_line_meets_the_ceiling() {
        let n = saturation_cores(&TEST, 0.1);
        assert!((n - 50.0).abs() < 1e-9);
        // There, Amdahl gives about half of both lines: 10 / (10 + 0.2·49) of n/C.
        let x = items_per_second(&TEST, 0.1, n);
        assert!((x - 1e3 * 50.0 / 19.8).abs() < 1e-6, "{x}");
    }

    #[test]
    fn without_serialized_work_throughput_grows_with_the_cores() {
        assert!((items_per_second(&TEST, 0.0, 192.0) - 19_200.0).abs() < 1e-9);
    }
}
