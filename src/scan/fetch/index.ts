// Public API of the SSRF-safe image fetcher. The test seam (fetchImageWithSeams) is
// deliberately not re-exported here.
export { FetchRefusedError, isFetchRefusedError, type FetchErrorCode } from './errors';
export { DEFAULT_FETCH_POLICY, fetchPolicy, type FetchPolicy, type ResolvedAddress } from './policy';
export { checkUrl, fetchImage, MAX_URL_LENGTH, USER_AGENT, type FetchedImage } from './fetcher';
export { classifyAddress, type AddressVerdict } from './ip';
