// A 5x7 bitmap font for the labels drawn into PNG images (the heap map legend). It has digits,
// capital letters and the punctuation our labels use; lower-case text is drawn in capitals and any
// other character as a hollow box, so a label never disappears silently.
#pragma once

#include <string_view>

#include "report/image.h"

namespace memprof::report {

inline constexpr int kGlyphWidth = 5;
inline constexpr int kGlyphHeight = 7;
inline constexpr int kGlyphAdvance = kGlyphWidth + 1;  // one column of spacing

// Width in pixels of `text` drawn at `scale` (each font pixel becomes scale x scale pixels).
int text_width(std::string_view text, int scale);

// Draws `text` with its top-left corner at (x, y); returns the x just past the last glyph.
int draw_text(Image& image, int x, int y, std::string_view text, Rgb color, int scale);

}  // namespace memprof::report
