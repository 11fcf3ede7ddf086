// Public API of the SSRF-safe fetcher (images) and guarded requests (webhooks). The test seam (fetchImageWithSeams) is
// deliberately not re-exported here.
export { FetchRefusedError, isFetchRefusedError, type FetchErrorCode } from './errors';
export { DEFAULT_FETCH_POLICY, fetchPolicy, type FetchPolicy, type ResolvedAddress } from './policy';
export { fetchImage, USER_AGENT, type FetchedImage } from './fetcher';
export { checkAddresses, checkUrl, guardedRequest, IMAGE_WORDS, MAX_URL_LENGTH, type UrlWords } from './guarded-request';
export { classifyAddress, type AddressVerdict } from './ip';
