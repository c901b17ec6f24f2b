// The JavaScript that draws report.html: report/report_page.js, embedded by the build
// (report/CMakeLists.txt) so the page and the binary need no file at run time.
#pragma once

namespace tpusim {

extern const char* const kReportPageScript;

}  // namespace tpusim
