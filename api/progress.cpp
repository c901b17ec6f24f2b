#include "api/progress.hpp"

#include <chrono>
#include <cstdio>
#include <memory>

#include "report/text_format.hpp"

namespace tpusim {

namespace {

constexpr double kQuietSeconds = 1.0;
constexpr double kBarRedrawSeconds = 0.2;
constexpr double kLineSeconds = 10.0;
constexpr int kBarWidth = 24;

double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", value);
  return text;
}

}  // namespace

ProgressPrinter::ProgressPrinter(std::ostream& out, bool bar, std::function<double()> clock)
    : m_out(out), m_bar(bar), m_clock(clock ? std::move(clock) : steadySeconds) {}

std::string ProgressPrinter::describe(const SimProgress& progress, double elapsed_s) {
  const double done = progress.instructions > 0
                          ? static_cast<double>(progress.retired) / static_cast<double>(progress.instructions)
                          : 1.0;
  std::string text = std::to_string(static_cast<int>(done * 100)) + "% " + withCommas(progress.retired) + "/" +
                     withCommas(progress.instructions) + " instructions, " + withCommas(progress.cycles) +
                     " simulated cycles, " + seconds(elapsed_s) + " elapsed";
  if (progress.retired > 0 && progress.retired < progress.instructions) {
    text += ", ETA " + seconds(elapsed_s * (1.0 - done) / done);
  }
  return text;
}

void ProgressPrinter::report(const SimProgress& progress) {
  const double now = m_clock();
  if (m_start_s < 0) {
    m_start_s = now;
    return;
  }
  const double elapsed = now - m_start_s;
  const bool finished = progress.retired >= progress.instructions;
  if (elapsed < kQuietSeconds && !m_drawn) return;
  if (!finished && m_last_s >= 0 && now - m_last_s < (m_bar ? kBarRedrawSeconds : kLineSeconds)) return;
  m_last_s = now;
  const std::string text = describe(progress, elapsed);
  if (m_bar) {
    const double done = progress.instructions > 0
                            ? static_cast<double>(progress.retired) / static_cast<double>(progress.instructions)
                            : 1.0;
    const int filled = static_cast<int>(done * kBarWidth);
    m_out << "\r\033[K[" << std::string(static_cast<size_t>(filled), '#')
          << std::string(static_cast<size_t>(kBarWidth - filled), '.') << "] " << text;
    m_drawn = !finished;
    if (finished) m_out << "\n";
  } else {
    m_out << "progress: " << text << "\n";
  }
  m_out.flush();
}

ProgressCallback progressTo(std::ostream& out, bool bar) {
  auto printer = std::make_shared<ProgressPrinter>(out, bar);
  return [printer](const SimProgress& progress) { printer->report(progress); };
}

}  // namespace tpusim
