#include "sim/interconnect/topology.hpp"

#include <charconv>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

int rankOf(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::kRing: return 1;
    case TopologyKind::kTorus2d: return 2;
    case TopologyKind::kTorus3d: return 3;
    case TopologyKind::kTwistedTorus3d: return 3;
  }
  return 3;
}

Error configError(const std::string& message) {
  return Error(ErrorKind::kInvalidConfig, message);
}

}  // namespace

TopologyKind topologyKindFromName(const std::string& name) {
  if (name == "ring") return TopologyKind::kRing;
  if (name == "2d_torus") return TopologyKind::kTorus2d;
  if (name == "3d_torus") return TopologyKind::kTorus3d;
  if (name == "twisted_3d_torus") return TopologyKind::kTwistedTorus3d;
  throw configError("unknown ICI topology '" + name + "' (ring, 2d_torus, 3d_torus, twisted_3d_torus)");
}

const char* topologyKindName(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::kRing: return "ring";
    case TopologyKind::kTorus2d: return "2d_torus";
    case TopologyKind::kTorus3d: return "3d_torus";
    case TopologyKind::kTwistedTorus3d: return "twisted_3d_torus";
  }
  return "?";
}

std::vector<int> parseShape(const std::string& text) {
  std::vector<int> shape;
  size_t pos = 0;
  while (true) {
    const size_t end = std::min(text.find('x', pos), text.size());
    int value = 0;
    const char* first = text.data() + pos;
    const char* last = text.data() + end;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (first == last || ec != std::errc() || ptr != last) {
      throw configError("ICI shape '" + text + "': expected dimensions like 4x4x8");
    }
    if (value <= 0) throw configError("ICI shape '" + text + "': every dimension must be at least 1");
    shape.push_back(value);
    if (end == text.size()) break;
    pos = end + 1;
  }
  if (shape.size() > 3) throw configError("ICI shape '" + text + "': at most 3 dimensions");
  return shape;
}

Topology::Topology(TopologyKind kind, const std::vector<int>& shape, int64_t expected_chips, int slices)
    : m_kind(kind), m_slices(slices) {
  if (slices < 1) throw configError("ICI: a topology needs at least one slice, got " + std::to_string(slices));
  const int rank = rankOf(kind);
  if (static_cast<int>(shape.size()) != rank) {
    throw configError(std::string("ICI topology ") + topologyKindName(kind) + " needs a shape of " +
                      std::to_string(rank) + " dimension(s), got " + std::to_string(shape.size()));
  }
  int64_t chips = 1;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] <= 0) throw configError("ICI shape: every dimension must be at least 1");
    m_dims[d] = shape[d];
    chips *= shape[d];
    // Chip and link ids are int32: 6 links per chip must fit.
    if (chips * slices > (int64_t{1} << 28)) throw configError("ICI shape: too many chips");
  }
  chips *= slices;
  m_num_chips = static_cast<int>(chips);
  if (kind == TopologyKind::kTwistedTorus3d &&
      !(m_dims[0] == m_dims[1] && m_dims[2] == 2 * m_dims[0] && m_dims[0] >= 2)) {
    throw configError("twisted 3D torus must be k x k x 2k with k >= 2, got " + shapeString());
  }
  if (expected_chips > 0 && chips != expected_chips) {
    throw configError("ICI shape " + shapeString() + " has " + std::to_string(chips) + " chips, but the slice has " +
                      std::to_string(expected_chips));
  }
}

Topology Topology::parse(TopologyKind kind, const std::string& shape, int64_t expected_chips, int slices) {
  return Topology(kind, parseShape(shape), expected_chips, slices);
}

std::string Topology::shapeString() const {
  std::string s = std::to_string(m_dims[0]);
  for (int d = 1; d < rankOf(m_kind); ++d) {
    s += 'x';
    s += std::to_string(m_dims[d]);
  }
  return s;
}

Coords Topology::coords(ChipId global) const {
  const ChipId chip = global % chipsPerSlice();
  return Coords{chip % m_dims[0], (chip / m_dims[0]) % m_dims[1], chip / (m_dims[0] * m_dims[1])};
}

int Topology::twistShift(int d, int from, int dir) const {
  if (m_kind != TopologyKind::kTwistedTorus3d || d == 2) return 0;
  const bool wraps = dir > 0 ? from == m_dims[d] - 1 : from == 0;
  return wraps ? m_dims[0] : 0;  // k = dims[2] / 2
}

ChipId Topology::neighbor(ChipId chip, int d, int dir) const {
  if (m_dims[d] < 2) throw Error(ErrorKind::kInternal, "ICI: no links along a dimension of size 1");
  Coords c = coords(chip);
  const int shift = twistShift(d, c[d], dir);
  c[d] = (c[d] + dir + m_dims[d]) % m_dims[d];
  c[2] = (c[2] + shift) % m_dims[2];
  return chipAt(c, sliceOf(chip));
}

int Topology::numLinks() const {
  int per_chip = 0;
  for (int d = 0; d < kDims; ++d) per_chip += m_dims[d] >= 2 ? kDirections : 0;
  return per_chip * m_num_chips;
}

std::string Topology::linkName(LinkId link) const {
  static const char kAxis[] = {'x', 'y', 'z'};
  return "chip" + std::to_string(linkSource(link)) + "." + kAxis[linkDim(link)] + (linkDir(link) > 0 ? "+" : "-");
}

}  // namespace tpusim
