// A dropped file, read twice: its original bytes as base64 for the request (never re-encoded), and
// a preview decoded by the browser and scaled down to at most the shown width, so that a large
// phone photo costs only a small bitmap on the page. EXIF orientation is applied, as the service does.

export const SHOWN_MAX_WIDTH = 480;

export async function base64Of(file: Blob): Promise<string> {
  const url = await new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
  return url.slice(url.indexOf(',') + 1);
}

/** The preview, or null when this browser cannot decode the format (TIFF): the answer is drawn on a blank. */
export async function previewOf(file: Blob): Promise<ImageBitmap | null> {
  try {
    const full = await createImageBitmap(file, { imageOrientation: 'from-image' });
    const scale = Math.min(1, SHOWN_MAX_WIDTH / full.width);
    const small = await createImageBitmap(full, {
      resizeWidth: Math.max(1, Math.round(full.width * scale)),
      resizeHeight: Math.max(1, Math.round(full.height * scale)),
      resizeQuality: 'high',
    });
    full.close();
    return small;
  } catch {
    return null;
  }
}
