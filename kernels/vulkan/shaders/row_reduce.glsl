// Work-group reductions for the row ops: one work-group of WG invocations per row. Every
// invocation must call these (they hold barriers).
shared float red[WG];

float group_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

float group_max(float v) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (t < s) red[t] = max(red[t], red[t + s]);
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}
