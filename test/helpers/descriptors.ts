/**
 * The descriptors this process holds open, for tests that a file is closed once its reading or writing ends.
 */
import { existsSync, readdirSync, readlinkSync } from "node:fs"

/** How many descriptors this process holds open on `path` (Linux); 0 where that cannot be seen. */
export const openDescriptors = (path: string): number => {
  if (!existsSync("/proc/self/fd")) return 0
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path
    } catch {
      return false
    }
  }).length
}
