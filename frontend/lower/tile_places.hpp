// Where each DMA transfer starts within its HBM buffer (DmaTransfer.hbm_offset), so
// that the HBM address a transfer carries tells its tile from the buffer's other tiles
// (CMEM looks lines up by address; docs/memory.md, "Addresses").
//
// A transfer reads or writes `bytes` of a byte range that the lowering already knows
// for its dependencies. When the range is the tile (bytes == its size), the tile
// starts at the range's first byte. When the range is wider (a column block of a
// row-major matrix lies strided over all its rows), the tiles of that range on one
// core are placed one after another in the order they are moved, starting again at
// the range's first byte once they have covered it: in each pass over a range, the
// k-th tile moved gets the k-th slice. Each tile then owns bytes no other tile of the
// range owns, and a tile moved again in the next pass gets its slice back. A strided
// tile is so counted as contiguous; its bytes are the tile's own, not the ones the
// real strided layout holds. Places restart with every op.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>

namespace tpusim::lowering {

class TilePlaces {
 public:
  // Offset within the buffer of the next `bytes` moved by `core` from [begin, end) of `buffer`.
  uint64_t next(uint32_t core, uint32_t buffer, uint64_t begin, uint64_t end, uint64_t bytes) {
    const uint64_t size = end - begin;
    if (bytes >= size) return begin;
    uint64_t& cursor = m_cursor[{core, buffer, begin, end}];
    if (cursor + bytes > size) cursor = 0;  // the range is covered: the next pass starts over
    const uint64_t place = begin + cursor;
    cursor += bytes;
    return place;
  }
  void startOp() { m_cursor.clear(); }

 private:
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint64_t>, uint64_t> m_cursor;
};

}  // namespace tpusim::lowering
