// The dashboard's page template, style sheet and script (coordinator/dashboard/), compiled in by
// cmake/embed_text.cmake. report_html.cpp assembles them into one self-contained file.
#pragma once

#include <string_view>

namespace am::coord::assets {

extern const std::string_view kDashboardHtml;   // dashboard/dashboard.html
extern const std::string_view kDashboardCss;    // dashboard/dashboard.css
extern const std::string_view kDashboardJs;     // dashboard/dashboard.js

}  // namespace am::coord::assets
