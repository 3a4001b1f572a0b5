// The per-shard entry of parts.cpp; the dispatch (dispatch.cpp) sees this declaration only.
#pragma once

// item * 100 + the shard that compiled it; asking a shard for another shard's item returns -1.
template <int kShard, int kShards>
int part(int item);
