//! Latency recording (HdrHistogram, nanoseconds) and the summary reported in results.
//!
//! Coordinated omission: in fixed-rate mode every sample is measured from the message's
//! *intended* send time (see `pacing`), so a stall delays the schedule's clock, not the
//! measurement, and the histogram sees every message that waited behind it.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::limits::{LATENCY_CURVE_QUANTILES, LATENCY_MAX_TRACKABLE, LATENCY_SIGNIFICANT_DIGITS};

pub struct LatencyRecorder {
    histogram: Histogram<u64>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> Self {
        let highest = LATENCY_MAX_TRACKABLE.as_nanos() as u64;
        let histogram = Histogram::new_with_bounds(1, highest, LATENCY_SIGNIFICANT_DIGITS)
            .expect("latency histogram bounds are valid constants");
        Self { histogram }
    }

    /// Records one sample; samples beyond the trackable maximum are clamped to it.
    pub fn record(&mut self, latency: Duration) {
        let nanos = (latency.as_nanos() as u64).clamp(1, self.histogram.high());
        self.histogram.saturating_record(nanos);
    }

    pub fn merge(&mut self, other: &LatencyRecorder) {
        self.histogram.add(&other.histogram).expect("histograms share bounds");
    }

    pub fn summary(&self) -> Option<LatencySummary> {
        if self.histogram.is_empty() {
            return None;
        }
        let micros = |nanos: u64| nanos as f64 / 1_000.0;
        let at = |quantile: f64| micros(self.histogram.value_at_quantile(quantile));
        let mut curve: Vec<QuantilePoint> = LATENCY_CURVE_QUANTILES
            .iter()
            .map(|&quantile| QuantilePoint { quantile, latency_us: at(quantile) })
            .collect();
        curve.push(QuantilePoint { quantile: 1.0, latency_us: micros(self.histogram.max()) });
        Some(LatencySummary {
            count: self.histogram.len(),
            mean_us: self.histogram.mean() / 1_000.0,
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: micros(self.histogram.max()),
            curve,
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// (quantile, latency) points for percentile plots, ending with the max at 1.0.
    pub curve: Vec<QuantilePoint>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QuantilePoint {
    pub quantile: f64,
    pub latency_us: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reports_percentiles_in_microseconds() {
        let mut recorder = LatencyRecorder::new();
        for micros in 1..=1000u64 {
            recorder.record(Duration::from_micros(micros));
        }
        let summary = recorder.summary().expect("has samples");
        assert_eq!(summary.count, 1000);
        assert!((summary.p50_us - 500.0).abs() < 1.0, "{}", summary.p50_us);
        assert!((summary.max_us - 1000.0).abs() < 1.0, "{}", summary.max_us);
        assert_eq!(summary.curve.last().map(|point| point.quantile), Some(1.0));
    }
}
