#pragma once
// The cpu backend's convolution algorithms: the one interface of
// conv/conv_algorithm.h on host buffers, one file per algorithm
// (conv_NAME.cpp), each registering itself in conv_registry(). The tensor op
// conv2d (and its autograd) sits on top: it picks an algorithm, asks it for
// workspace, allocates that, and calls one of the three passes.
#include <vector>

#include "conv/conv_algorithm.h"

namespace convkit::cpu {

using conv::ConvAlgorithm;

// The cpu implementations, filled by the algorithms' registrars.
conv::ConvAlgorithmRegistry& conv_registry();

// The implementation of `algo`; throws Error for automatic (pick one with
// choose_conv_algorithm_heuristic first).
const ConvAlgorithm& conv_algorithm(ConvAlgo algo);
// Every algorithm, in table order (convkit/conv/algorithms.h).
std::vector<const ConvAlgorithm*> conv_algorithms();

}  // namespace convkit::cpu
