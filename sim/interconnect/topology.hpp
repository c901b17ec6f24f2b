// ICI topologies: ring, 2D torus, 3D torus and the twisted 3D torus of TPUv4.
//
// Every topology is held as three dimensions (x, y, z); a ring is "p x 1 x 1"
// and a 2D torus "a x b x 1". Each dimension of size >= 2 is a ring with
// wraparound, and every chip has one outgoing directed link per dimension and
// direction (+ and -): a full-duplex cable is two link objects.
//
// The twisted torus follows Jouppi et al., "TPU v4: An Optically Reconfigurable
// Supercomputer for Machine Learning with Hardware Support for Embeddings",
// ISCA 2023, section 2 (twisted tori on k x k x 2k slices). The wiring modelled
// here: the shape is k x k x 2k; x and y links that do not wrap are regular;
// an x or y link that wraps around (x = k-1 -> 0 going +, 0 -> k-1 going -)
// also moves k chips along z (mod 2k). z links are regular. Shifting by k is
// its own inverse mod 2k, so the cable is the same in both directions.
//
// Several slices: `slices` disjoint copies of the shape with no ICI between
// them (hosts joined only by the DCN, sim/interconnect/dcn.hpp). Chip ids are
// slice-major: chip = slice * chipsPerSlice() + the id within the slice, and
// coords() are a chip's coordinates within its slice.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tpusim {

enum class TopologyKind { kRing, kTorus2d, kTorus3d, kTwistedTorus3d };

// "ring", "2d_torus", "3d_torus", "twisted_3d_torus"; anything else is a one-line error.
TopologyKind topologyKindFromName(const std::string& name);
const char* topologyKindName(TopologyKind kind);

// "4x4x8" -> {4, 4, 8}. Bad syntax or a zero dimension is a one-line
// kInvalidConfig error naming the text.
std::vector<int> parseShape(const std::string& text);

using ChipId = int32_t;
using LinkId = int32_t;
using Coords = std::array<int, 3>;

constexpr int kDims = 3;
constexpr int kDirections = 2;  // index 0: +, index 1: -

class Topology {
 public:
  // The shape must have as many dimensions as the kind (1, 2 or 3), each >= 1;
  // a twisted torus must be k x k x 2k. If expected_chips > 0, the product of
  // the shape must equal it. Violations are one-line kInvalidConfig errors.
  // `slices` copies of the shape (>= 1); expected_chips counts all of them.
  Topology(TopologyKind kind, const std::vector<int>& shape, int64_t expected_chips = 0, int slices = 1);
  // The same from a shape string ("4x4x4").
  static Topology parse(TopologyKind kind, const std::string& shape, int64_t expected_chips = 0, int slices = 1);

  TopologyKind kind() const { return m_kind; }
  const Coords& dims() const { return m_dims; }
  int dim(int d) const { return m_dims[d]; }
  int numChips() const { return m_num_chips; }
  // The shape of one slice.
  std::string shapeString() const;
  int slices() const { return m_slices; }
  int chipsPerSlice() const { return m_num_chips / m_slices; }
  int sliceOf(ChipId chip) const { return chip / chipsPerSlice(); }

  // Coordinates within the chip's slice; chipAt gives the chip of slice `slice` there.
  Coords coords(ChipId chip) const;
  ChipId chipAt(const Coords& c, int slice = 0) const {
    return slice * chipsPerSlice() + c[0] + m_dims[0] * (c[1] + m_dims[1] * c[2]);
  }

  // The chip reached by one hop from `chip` along dimension d in direction
  // dir (+1 or -1), with the twist applied on wraparound. A dimension of
  // size 1 has no links: asking for its neighbour is an internal error.
  ChipId neighbor(ChipId chip, int d, int dir) const;
  // z shift (mod dim(2)) taken by a hop along d from coordinate `from` in
  // direction dir: k on a wrapping x or y hop of the twisted torus, else 0.
  int twistShift(int d, int from, int dir) const;

  // Directed links: one per chip, dimension of size >= 2 and direction.
  // Ids are dense in [0, numLinkSlots()); slots of size-1 dimensions are unused.
  static LinkId linkId(ChipId chip, int d, int dir) { return chip * (kDims * kDirections) + d * 2 + (dir > 0 ? 0 : 1); }
  int numLinkSlots() const { return m_num_chips * kDims * kDirections; }
  bool linkExists(LinkId link) const { return m_dims[(link % (kDims * kDirections)) / 2] >= 2; }
  int numLinks() const;  // existing directed links
  ChipId linkSource(LinkId link) const { return link / (kDims * kDirections); }
  int linkDim(LinkId link) const { return (link % (kDims * kDirections)) / 2; }
  int linkDir(LinkId link) const { return link % 2 == 0 ? 1 : -1; }
  ChipId linkDest(LinkId link) const { return neighbor(linkSource(link), linkDim(link), linkDir(link)); }
  // "chip5.x+" for reports.
  std::string linkName(LinkId link) const;

 private:
  TopologyKind m_kind;
  Coords m_dims{1, 1, 1};
  int m_num_chips = 1;
  int m_slices = 1;
};

}  // namespace tpusim
