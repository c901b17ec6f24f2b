// trace.json: the instruction timeline as Chrome trace-event JSON, which loads in
// ui.perfetto.dev and chrome://tracing (docs/report-schema.md, "trace.json"). One process per
// chip, one thread (track) per execution unit; a DMA engine with transfers in flight at
// once gets one extra track per transfer it overlaps ("chip0.core0.dma0 #1"), because a
// track shows only nested slices. One complete ("X") event per instruction, its time
// in microseconds from the cycles and the clock. With report.json's "memory_timeline", a
// counter ("C") of the HBM bytes held, one value per window.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tpusim {

// From report.json's "ops", "units" and "clock_hz"; the tracks are named even when
// "ops" is empty. Throws Error(kInvalidInput) for an op on a unit "units" does not list.
std::string traceJson(const nlohmann::ordered_json& report);

}  // namespace tpusim
