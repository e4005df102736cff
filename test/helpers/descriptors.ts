/**
 * The descriptors this process holds open, for tests that a file is closed once its reading or writing ends.
 */
import { existsSync, readdirSync, readlinkSync, realpathSync } from "node:fs"

/** How many descriptors this process holds open on `path`, or on a file once there (Linux); 0 where that cannot be seen. */
export const openDescriptors = (path: string): number => {
  if (!existsSync("/proc/self/fd")) return 0
  // the file's real path (the temporary folder may sit behind a link), and as a descriptor on a file since replaced
  // or removed shows it
  const real = existsSync(path) ? realpathSync(path) : path
  const names = new Set([path, real, `${path} (deleted)`, `${real} (deleted)`])
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return names.has(readlinkSync(`/proc/self/fd/${fd}`))
    } catch {
      return false
    }
  }).length
}
